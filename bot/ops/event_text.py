"""An event as a line a person reads: what happened, in words, not JSON.

`what(event)` gives the facts of its data as `key value` phrases, the usual ones first
and worded (`remember, ok, 9 ms`; `from Ann in slack`), ids and digests left out; the
dashboard's lists and its live stream both use it.
"""

from __future__ import annotations

from typing import Any

from bot.core.events import Event

LIMIT = 240
#: data a reader has no use for in a one-line summary
_HIDDEN = frozenset({"args_digest", "person_id", "sender_id", "id", "message_id", "digest",
                     "refs", "error_type"})  # fmt: skip
#: how a run of each type is counted ("37 tool calls")
PLURALS = {
    "tool.called": "tool calls", "memory.written": "memory writes",
    "message.received": "messages received", "message.sent": "messages sent",
    "llm.error": "model errors", "worker.reminded": "reminders",
}  # fmt: skip


def plural(event_type: str, n: int) -> str:
    name = PLURALS.get(event_type, event_type)
    return f"{n} {name}" if n != 1 or event_type not in PLURALS else f"1 {name[:-1]}"


def what(event: Event) -> str:
    data = dict(event.data)
    lead = _lead(event.type, data)
    rest = [f"{k.replace('_', ' ')} {_value(v)}" for k, v in data.items() if _shown(k, v)]
    text = ", ".join([*lead, *rest])
    return text if len(text) <= LIMIT else text[: LIMIT - 1] + "\u2026"


def _lead(kind: str, data: dict[str, Any]) -> list[str]:
    """The phrases that say most, worded, taken out of `data`."""
    out: list[str] = []
    if kind == "tool.called":
        tool = data.pop("tool", "?")
        ok = data.pop("ok", None)
        ms = data.pop("ms", None)
        out.append(f"{tool}" + ("" if ok is None else (" ok" if ok else " failed")))
        if isinstance(ms, int | float):
            out.append(f"{ms:.0f} ms")
        data.pop("outcome", None)
    who = data.pop("person", None) or data.pop("sender", None)
    if who:
        out.append(f"from {who}" if kind == "message.received" else f"by {who}")
    channel = data.pop("channel", None)
    if channel:
        out.append(f"in {channel}")
    return out


def _shown(key: str, value: object) -> bool:
    return key not in _HIDDEN and value not in (None, "", [], {}, False)


def _value(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
