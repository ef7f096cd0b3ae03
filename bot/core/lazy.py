"""Modules loaded on first use: the one way a module defers a heavy import.

`anthropic = lazy("anthropic")` (under `if not TYPE_CHECKING`, the real import above it
for mypy) binds a stand-in whose first attribute access imports the module. The import
goes through the import system and its per-module lock, so `preload()` running it in a
worker thread and a first use in the loop meanwhile load it once: the use waits for the
rest of the load, never starts a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
from collections.abc import Iterable, Iterator
from typing import Any

#: the collector's first threshold while a start imports and builds (~1,000 modules,
#: ~200,000 objects that live as long as the process, few of them garbage) and preloads
#: the model's SDK (~3,200 modules more): at the usual 700 that is ~180 collections, 50-70
#: ms of CPU, before Slack connects, and ~250, 60-90 ms, before a first answer can go
STARTING_THRESHOLD = 50_000
_usual: list[tuple[int, int, int]] = []  # the thresholds `starting` replaced


class Lazy:
    """A module imported at the first attribute read (an already loaded one costs a
    dictionary lookup per read)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.name), attr)


def lazy(name: str) -> Any:
    return Lazy(name)


async def preload(name: str) -> None:
    """Import `name` in a worker thread, so the loop keeps serving meanwhile; then
    freeze the heap, as the start does (`settle_heap`): a module's objects
    left in the collector's sight make every full collection walk them."""
    await asyncio.to_thread(_load, name)


def _load(name: str) -> None:
    importlib.import_module(name)
    settle_heap()


async def connected(channels: Iterable[object]) -> None:
    """Until every channel with a `ready` event (Slack's) has connected: a preload waits
    for it (under a timeout), so an import in a thread does not slow the connection
    (one GIL)."""
    events = [getattr(c, "ready", None) for c in channels]
    await asyncio.gather(*(e.wait() for e in events if isinstance(e, asyncio.Event)))


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """Collect less often while the start builds and preloads, until `settled()` (once
    the app's preload is done) or the end of the block."""
    if not _usual:
        _usual.append(gc.get_threshold())
        gc.set_threshold(STARTING_THRESHOLD, *_usual[0][1:])
    try:
        yield
    finally:
        _usual_thresholds()


def settle_heap() -> None:
    """Move everything built so far (the SDKs' modules and models: ~200,000 objects at
    start) out of the collector's sight. Left in, every full collection walks them all
    and stalls the event loop for 30-160 ms, and a burst of events waits that long for
    its acks (tests/bench/bench_slack.py: ack p99 84 ms -> 27 ms at 100 mentions/s).
    No collection first: it would cost 0.1 s of every start to free a little garbage."""
    gc.freeze()


def settled() -> None:
    """After a start's preload: the collector's usual thresholds back, the heap frozen."""
    _usual_thresholds()
    settle_heap()


def _usual_thresholds() -> None:
    if _usual:  # a no-op outside `starting`, or once put back
        gc.set_threshold(*_usual.pop())
