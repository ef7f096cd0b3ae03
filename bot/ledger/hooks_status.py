"""The hooks line of `switchboard status`: per hook, its last delivery, what became of
it and how many were taken in, as the hook desk (bot/ops/hooks_desk.py) records them
in the store (`hooks.last`), so it reads the same whether or not the bot runs."""

from __future__ import annotations

import json

from bot.ledger.status import ago
from bot.store.core import Store

#: the store key the hook desk writes (bot/ops/hooks_desk.py LAST_KEY)
LAST_KEY = "hooks.last"


def hooks_section(store: Store) -> str:
    raw = store.get_kv(LAST_KEY)
    try:
        last = json.loads(raw) if raw else {}
    except ValueError:
        last = {}
    if not isinstance(last, dict) or not last:
        return "hooks: none delivered yet"
    parts = [
        f"{name} {entry.get('count', 0)} taken, last {ago(entry.get('at'))}: "
        f"{entry.get('outcome', '?')}"
        for name, entry in sorted(last.items())
        if isinstance(entry, dict)
    ]
    return "hooks: " + "; ".join(parts)
