"""The whole `switchboard status` report: the core's parts and every section the
runtime's components contribute (triggers, maintenance, usage, MCP, approvals), named
in one place instead of registered as a side effect of importing the app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.ledger.hooks_status import hooks_section
from bot.ledger.status import Section, render_status
from bot.ledger.storage import storage_section
from bot.ledger.tools_status import approvals_section, mcp_section
from bot.ledger.usage import usage_section
from bot.store.core import Store
from bot.triggers.status import maintenance_section, triggers_section

SECTIONS: tuple[Section, ...] = (
    triggers_section,
    maintenance_section,
    usage_section,
    mcp_section,
    approvals_section,
    hooks_section,
)


def full_status(
    store: Store, this_node: Callable[[str], bool] | None = None, data_dir: Path | None = None
) -> str:
    """`data_dir`: the storage lines too (bot/ledger/storage.py)."""
    if data_dir is None:
        return render_status(store, SECTIONS, this_node)

    def storage(store: Store) -> str:
        return storage_section(store, data_dir)

    return render_status(store, (*SECTIONS, storage), this_node)
