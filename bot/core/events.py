"""The event log: every runtime fact, appended to `<data_dir>/events.jsonl`.

Subscribers (trigger engine, idle tracking, tests) are called synchronously for each
event; a subscriber that raises is logged and never breaks the emitter.
Event types follow reference 000 section 9: `agent.*`, `worker.*`, `message.*`,
`tool.*`, `human.*`, `memory.*`, plus `channel.*`, `outbox.*` and `llm.*`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

log = logging.getLogger(__name__)
#: one encoder for every line (`json.dumps(default=...)` builds one per call)
_encode = json.JSONEncoder(default=str).encode


@dataclass(slots=True)
class Event:
    type: str
    agent_id: str
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)


Subscriber = Callable[[Event], None]


class EventLog:
    """Append-only JSON lines plus in-process subscribers."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8", buffering=1)
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def emit(self, type: str, agent_id: str = "", **data: Any) -> Event:
        event = Event(type, agent_id, data)
        if self._file is not None:
            line = {"type": type, "agent_id": agent_id, "data": data, "ts": event.ts}
            self._file.write(_encode(line) + "\n")
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:
                log.exception("event subscriber failed on %s", type)
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


#: how far back of `since` the search starts: wall-clock steps (NTP) can leave a
#: line a little out of order, and a line early by less than this is still found
CLOCK_SLACK_SECONDS = 60.0
BLOCK = 8192


def read_events(path: Path, since: float = 0.0, until: float | None = None) -> Iterator[Event]:
    """Events in [since, until) from a log file; unreadable lines are skipped.

    The log only grows (weeks of events are many megabytes), and heartbeats and
    summaries ask for the last hour or day: the start is found by bisecting the file
    on the lines' timestamps instead of reading it from the beginning."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        fh.seek(offset_before(fh, since - CLOCK_SLACK_SECONDS))
        for raw in fh:
            event = parse_line(raw)
            if event is None or event.ts < since:
                continue
            if until is not None and event.ts >= until:
                if event.ts >= until + CLOCK_SLACK_SECONDS:
                    return
                continue
            yield event


def parse_line(raw: bytes) -> Event | None:
    try:
        line = json.loads(raw.decode("utf-8", errors="replace"))
        return Event(line["type"], line.get("agent_id", ""), line.get("data", {}), line["ts"])
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None


def offset_before(fh: BinaryIO, ts: float) -> int:
    """A line start at or before the first line stamped `ts` or later."""
    lo, hi = 0, fh.seek(0, 2)
    while hi - lo > BLOCK:
        mid = (lo + hi) // 2
        fh.seek(mid)
        fh.readline()  # the rest of the line `mid` fell in
        start = fh.tell()
        first = None
        while first is None and fh.tell() < hi:
            first = parse_line(fh.readline())
        if first is None or first.ts >= ts:
            hi = mid
        else:
            lo = start  # a line start: everything from `ts` on lies after it
    return lo
