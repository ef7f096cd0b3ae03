"""What happened in a period, as text an agent can summarise ("summarize yesterday").

Reads the journal of people's messages and the sent outbox (the conversations),
worker results and failures and trigger runs from the event log, the open
questions, and a count of every other event type. Read-only; the text is capped so
that a busy day still fits in a model turn.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.core.events import Event, read_events
from bot.core.trigger_spec import TriggerError, parse_instant
from bot.store.core import Store
from config.settings import Database

MAX_CHARS = 16000
PER_CONVERSATION = 30
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(slots=True)
class Period:
    since: float
    until: float
    zone: tzinfo

    def label(self) -> str:
        fmt = "%Y-%m-%d %H:%M"
        start = datetime.fromtimestamp(self.since, self.zone).strftime(fmt)
        end = datetime.fromtimestamp(self.until, self.zone).strftime(fmt)
        return f"{start} to {end} ({self.zone})"


def period(since: str, until: str | None, zone_name: str, now: float) -> Period:
    """`since`/`until`: ISO 8601, `today`, `yesterday`, or a span back from now (`24h`)."""
    zone = ZoneInfo(zone_name)
    if since.strip().lower() == "yesterday" and until is None:
        start = _midnight(now, zone, days_back=1)
        return Period(start, _midnight(now, zone, days_back=0), zone)
    start = _instant(since, "since", zone, now)
    end = now if until is None else _instant(until, "until", zone, now)
    if end <= start:
        raise TriggerError(f"until ({until}) must be after since ({since})")
    return Period(start, end, zone)


def _midnight(now: float, zone: tzinfo, days_back: int) -> float:
    day = datetime.fromtimestamp(now, zone).date() - timedelta(days=days_back)
    return datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()


def _instant(text: str, name: str, zone: tzinfo, now: float) -> float:
    word = text.strip().lower()
    if word in ("today", "yesterday"):
        return _midnight(now, zone, days_back=int(word == "yesterday"))
    if word == "now":
        return now
    span = _DURATION.match(word)
    if span:
        return now - float(span.group(1)) * _UNIT[span.group(2)]
    when = parse_instant(text, zone)
    if when is None:
        raise TriggerError(
            f"{name} {text!r} is not a time: use ISO 8601 (2030-02-11T09:00), 'today', "
            "'yesterday', or a span back from now like '24h', '30m', '7d'"
        )
    return when.timestamp()


def read_activity(where: Database, events_path: Path | None, p: Period) -> str:
    """Blocking (reads the event log file): run it in a thread. It opens its own
    read-only connection, so it never shares the loop's connection or transaction."""
    store = Store(where, readonly=True)
    try:
        return _read(store, events_path, p)
    finally:
        store.close()


def _read(store: Store, events_path: Path | None, p: Period) -> str:
    events = [] if events_path is None else list(read_events(events_path, p.since, p.until))
    parts = [
        f"Activity from {p.label()}.",
        _conversations(store, p),
        _workers(events, p.zone),
        _questions(store, p.zone),
        _counts(events),
    ]
    text = "\n\n".join(part for part in parts if part)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "\n... (cut: ask for a shorter period for the rest)"
    return text


def _conversations(store: Store, p: Period) -> str:
    lines: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for msg in store.inbound_between(p.since, p.until):
        line = f"{msg.sender.display}: {_short(msg.text)}"
        lines[msg.conversation].append((msg.received_at, line))
    for at, sent in store.outbox.sent_between(p.since, p.until):
        line = f"{sent.agent} -> {sent.target}: {_short(sent.text)}"
        lines[sent.conversation or str(sent.target)].append((at, line))
    if not lines:
        return "Conversations: none in this period."
    out = [f"Conversations ({len(lines)}):"]
    for key, items in sorted(lines.items(), key=lambda kv: min(t for t, _ in kv[1])):
        items.sort()
        out.append(f"## {key} ({len(items)} messages)")
        out += [f"[{_clock(t, p.zone)}] {line}" for t, line in items[-PER_CONVERSATION:]]
    return "\n".join(out)


def _workers(events: list[Event], zone: tzinfo) -> str:
    lines = []
    for e in events:
        if e.type in ("worker.spawned", "worker.completed", "worker.failed"):
            detail = e.data.get("result") or e.data.get("error") or e.data.get("task") or ""
            what = e.type.split(".", 1)[1]
            lines.append(f"[{_clock(e.ts, zone)}] {e.agent_id} {what}: {_short(str(detail), 600)}")
    return "Workers:\n" + "\n".join(lines) if lines else "Workers: no worker activity."


def _questions(store: Store, zone: tzinfo) -> str:
    rows = store.agents.open_questions()
    if not rows:
        return "Open questions: none."
    lines = [
        f"- {q.worker} asked in {q.target} at {_clock(q.asked_at, zone)}: {q.question}"
        for q in rows
    ]
    return "Open questions (still waiting for an answer):\n" + "\n".join(lines)


def _counts(events: list[Event]) -> str:
    counts = Counter(e.type for e in events)
    if not counts:
        return "Events: none."
    return "Events by type: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items()))


def _clock(ts: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(ts, zone).strftime("%m-%d %H:%M")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
