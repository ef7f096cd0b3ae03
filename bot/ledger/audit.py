"""The audit log: every tool call, approval step, cross-scope access and operator action
as one append-only line in the store, fed by the event log; never message content.

An event of an audited type becomes a line holding only the time, the event type, the
agent and the fields named in AUDIT_KEYS (who, where, which tool, a digest of the
arguments, who decided how, the outcome); everything else the event carries stays in
events.jsonl. The table refuses updates and deletes (bot/store/schema.py), lives in the
store's database (so it survives restarts and is in every backup of it), and is read
by `switchboard audit` and the dashboard's /audit page.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from bot.core.events import Event, EventLog
from bot.core.names import who
from bot.core.readout import table
from bot.store.core import Store
from bot.store.schema import AuditLine

AUDITED = frozenset(
    {
        "tool.called", "approval.requested", "approval.decided", "scope.crossed",
        "operator.action", "access.refused",
    }
)  # fmt: skip
#: the only keys of an event's data that reach the audit line
AUDIT_KEYS = (
    "conversation", "person", "person_id", "tool", "args_digest", "resource", "action",
    "approval_id", "decider", "decider_id", "how", "outcome",
)  # fmt: skip
FIELD_MAX = 300  # a resource path or a conversation key, never a text


class AuditLog:
    """The event log's subscriber that writes the audit lines."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def attach(self, events: EventLog) -> Callable[[], None]:
        return events.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if event.type in AUDITED:
            self.store.audit.add(line_fields(event))


def line_fields(event: Event) -> dict[str, Any]:
    fields = {key: _field(event.data.get(key)) for key in AUDIT_KEYS}
    return {"at": event.ts, "type": event.type, "agent": event.agent_id, **fields}


def _field(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:FIELD_MAX]


# -- reading -------------------------------------------------------------------------
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """`90s`, `15m`, `2h`, `3d`, `1w` (a bare number is seconds) -> seconds."""
    found = _DURATION.match(text)
    if found is None:
        raise ValueError(f"not a duration: {text!r} (try 30m, 2h or 3d)")
    return float(found.group(1)) * _UNIT[found.group(2).lower()]


def recent(store: Store, since: str | None, now: float | None = None) -> list[AuditLine]:
    """The lines of the last `since` (a duration), else all of them (the newest 10,000)."""
    start = 0.0 if not since else (now or time.time()) - parse_duration(since)
    return store.audit.since(start)


def describe(line: AuditLine) -> tuple[str, ...]:
    """One line as the table cells `switchboard audit` and the dashboard show."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(line.at))
    what = line.tool or line.action or line.resource or ""
    if line.resource and line.resource != what:
        what = f"{what} -> {line.resource}" if what else line.resource
    decided = _decided(who(line.decider, line.decider_id), line.how)
    return (
        when, line.type, line.conversation or "", who(line.person, line.person_id),
        line.agent, what, line.args_digest or "", decided, line.outcome or "",
    )  # fmt: skip


def _decided(decider: str, how: str | None) -> str:
    """`Ann (slack:U1) via button`; the dashboard's own operator is just `dashboard`."""
    if not how:
        return ""
    return decider if decider == how else f"{decider} via {how}"


HEADERS = ("time (UTC)", "event", "conversation", "person", "agent", "tool / action",
           "args", "decided by", "outcome")  # fmt: skip


def report(store: Store, since: str | None, as_json: bool) -> str:
    """`switchboard audit`: a readable table, or one JSON object per line."""
    lines = recent(store, since)
    if as_json:
        return "\n".join(json.dumps(line.to_json(), ensure_ascii=False) for line in lines)
    if not lines:
        return "No audit lines" + (f" in the last {since}." if since else " yet.")
    return table(HEADERS, [describe(line) for line in lines])
