"""The event log: every runtime fact, appended to `<data_dir>/events.jsonl`.

Subscribers (trigger engine, idle tracking, tests) are called synchronously for each
event; a subscriber that raises is logged and never breaks the emitter.
Event types follow reference 000 section 9: `agent.*`, `worker.*`, `message.*`,
`tool.*`, `human.*`, `memory.*`, plus `channel.*`, `outbox.*` and `llm.*`.

The file is rotated by size: past `max_bytes` it becomes `events.jsonl.1` (the older ones
move on to `.2` ... `.<keep>`, the oldest dropped), and `read_events` reads across them.
Rotated files older than SWITCHBOARD_RETENTION are removed by the pruner
(bot/store/growth.py).
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
#: the field of an event that may be emitted again as the same one (a hook delivery
#: announced again after a restart): triggers fire on it once (bot/triggers/watchers.py)
EVENT_KEY = "event_key"


@dataclass(slots=True)
class Event:
    type: str
    agent_id: str
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)


Subscriber = Callable[[Event], None]


#: the defaults of SWITCHBOARD_EVENTS_MAX_BYTES and SWITCHBOARD_EVENTS_KEEP
MAX_BYTES = 64 * 1024 * 1024
KEEP = 5


class EventLog:
    """Append-only JSON lines plus in-process subscribers."""

    def __init__(self, path: Path | None, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8", buffering=1)
        self.write_failed = False
        #: bounded by the code: one per part that listens (engine, audit, idle, status)
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def emit(self, type: str, agent_id: str = "", **data: Any) -> Event:
        event = Event(type, agent_id, data)
        if self._file is not None:
            line = {"type": type, "agent_id": agent_id, "data": data, "ts": event.ts}
            self._write(_encode(line) + "\n")
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:
                log.exception("event subscriber failed on %s", type)
        return event

    def _write(self, line: str) -> None:
        """Append a line; a full disk loses the line (said once), never the emitter's work."""
        assert self._file is not None
        try:
            self._file.write(line)
            if self._file.tell() > self.max_bytes:
                self.rotate()
        except OSError as exc:
            if not self.write_failed:
                log.error("events.jsonl: a line could not be written (%s); lines are lost "
                          "until the disk has room", exc)  # fmt: skip
            self.write_failed = True
            return
        self.write_failed = False

    def rotate(self) -> None:
        """events.jsonl -> events.jsonl.1 -> ... -> .<keep>; the oldest is dropped."""
        if self._file is None or self.path is None:
            return
        self._file.close()
        for n in range(self.keep, 0, -1):
            older = rotated(self.path, n)
            if older.exists():
                if n == self.keep:
                    older.unlink()
                else:
                    older.replace(rotated(self.path, n + 1))
        self.path.replace(rotated(self.path, 1))
        self._file = self.path.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


#: how far back of `since` the search starts: wall-clock steps (NTP) can leave a
#: line a little out of order, and a line early by less than this is still found
CLOCK_SLACK_SECONDS = 60.0
BLOCK = 8192


def rotated(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def log_files(path: Path) -> list[Path]:
    """The log's files, oldest first: the rotated ones (`.N` ... `.1`), then the live one."""
    old = sorted(
        (p for p in path.parent.glob(path.name + ".*") if p.suffix[1:].isdigit()),
        key=lambda p: -int(p.suffix[1:]),
    )
    return [*old, path]


def read_events(path: Path, since: float = 0.0, until: float | None = None) -> Iterator[Event]:
    """Events in [since, until) from a log and its rotated files; unreadable lines are
    skipped. A rotated file last written before `since` is not opened."""
    for file in log_files(path):
        try:
            if file != path and file.stat().st_mtime < since - CLOCK_SLACK_SECONDS:
                continue
        except FileNotFoundError:
            continue
        yield from _read_file(file, since, until)


def _read_file(path: Path, since: float, until: float | None) -> Iterator[Event]:
    """Weeks of events are many megabytes, and heartbeats and summaries ask for the last
    hour or day: the start is found by bisecting the file on the lines' timestamps
    instead of reading it from the beginning."""
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
