"""Ending tasks for sure: cancel, and ask again until each one has ended.

`task.cancel()` then `await task` hangs for ever when the task swallows the
cancellation, and Python 3.11's `asyncio.wait_for` does exactly that when the awaited
answer arrives together with the cancellation (it returns the answer). Our code waits
under `asyncio.timeout`, which does not, but the SDKs (aioimaplib, discord.py, the MCP
SDK) use `wait_for`: every stop goes through `cancel_all`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

#: how long to wait for cancelled tasks before cancelling those left again
RECHECK_SECONDS = 1.0


async def cancel_all(
    tasks: Iterable[asyncio.Future[Any]], recheck: float = RECHECK_SECONDS
) -> None:
    """Cancel every task and return once all have ended; what they raised is retrieved
    (as `gather(return_exceptions=True)` does), not raised."""
    every = list(tasks)
    pending = {task for task in every if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=recheck)
    for task in every:
        if not task.cancelled():
            task.exception()
