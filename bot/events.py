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
from typing import IO, Any

log = logging.getLogger(__name__)


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
            # a plain dict, not asdict(): that deep-copies `data`, which only gets dumped
            line = {
                "type": event.type,
                "agent_id": event.agent_id,
                "data": event.data,
                "ts": event.ts,
            }
            self._file.write(json.dumps(line, default=str) + "\n")
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


def read_events(path: Path, since: float = 0.0, until: float | None = None) -> Iterator[Event]:
    """Events in [since, until) from a log file; unreadable lines are skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                raw = json.loads(line)
                event = Event(raw["type"], raw.get("agent_id", ""), raw.get("data", {}), raw["ts"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
            if event.ts >= since and (until is None or event.ts < until):
                yield event
