"""Modules loaded on first use: the one way a module defers a heavy import.

`anthropic = lazy("anthropic")` (under `if not TYPE_CHECKING`, the real import above it
for mypy) binds a stand-in whose first attribute access imports the module. The import
goes through the import system and its per-module lock, so `preload()` running it in a
worker thread and a first use in the loop meanwhile load it once: the use waits for the
rest of the load, never starts a second one.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from collections.abc import Iterable
from typing import Any


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
    freeze the heap, as the start does (bot/app.py `_settle_heap`): a module's objects
    left in the collector's sight make every full collection walk them."""
    await asyncio.to_thread(_load, name)


def _load(name: str) -> None:
    importlib.import_module(name)
    gc.freeze()


async def connected(channels: Iterable[object]) -> None:
    """Until every channel with a `ready` event (Slack's) has connected: a preload waits
    for it (under a timeout), so an import in a thread does not slow the connection
    (one GIL)."""
    events = [getattr(c, "ready", None) for c in channels]
    await asyncio.gather(*(e.wait() for e in events if isinstance(e, asyncio.Event)))
