"""Counting the event loop's turns: proof that it kept serving while something ran."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Turns:
    """How many times the loop turned since `turns()` began."""

    def __init__(self) -> None:
        self.count = 0


@contextlib.asynccontextmanager
async def turns() -> AsyncIterator[Turns]:
    """A task that counts one per turn of the event loop, while the block runs."""
    seen = Turns()

    async def tick() -> None:
        while True:
            seen.count += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(tick())
    await asyncio.sleep(0)
    seen.count = 0
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
