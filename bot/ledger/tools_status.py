"""`switchboard status` sections for the tools that act: MCP servers and pending
approvals, read from the store (the live process writes them)."""

from __future__ import annotations

import json

from bot.core.readout import ago, table
from bot.ledger.status import runtime_live
from bot.store.core import Store

MCP_PREFIX = "mcp:"


def mcp_section(store: Store) -> str:
    """With the process down (killed, or stopped) the last state it wrote is history:
    shown as `unknown (was <state>)`, never as a live `connected`."""
    live = runtime_live(store)
    rows = []
    for name, raw in sorted(store.kv_prefixed(MCP_PREFIX).items()):
        info = json.loads(raw)
        reason = info.get("reason") or ""
        refused = info.get("refused") or {}
        if refused:
            reason = (reason + "; " if reason else "") + "; ".join(
                f"{tool} not offered: {why}" for tool, why in refused.items()
            )
        rows.append(
            [
                name,
                info.get("transport"),
                info.get("state") if live else f"unknown (was {info.get('state')})",
                info.get("tools"),
                reason,
                ago(info.get("updated")),
            ]
        )
    if not rows:
        return "MCP servers: none configured"
    head = "MCP servers" if live else "MCP servers (Switchboard not running: last known)"
    return head + "\n" + table(["server", "via", "state", "tools", "reason", "updated"], rows)


def approvals_section(store: Store) -> str:
    rows = [
        [r.id, r.speaker, r.tool, r.target, ago(r.requested_at), json.dumps(r.args)]
        for r in store.approvals.pending()
    ]
    if not rows:
        return "Pending approvals: none"
    return "Pending approvals\n" + table(["id", "asks", "tool", "asked in", "asked", "args"], rows)
