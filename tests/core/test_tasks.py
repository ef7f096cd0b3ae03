"""bot/core/tasks.py: a stop ends its tasks, also one that swallowed a cancellation."""

from __future__ import annotations

import asyncio
import contextlib

from bot.core.tasks import cancel_all


async def test_a_task_that_swallows_its_first_cancellation_is_ended_all_the_same() -> None:
    async def stubborn() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)  # as Python 3.11's wait_for may do
        await asyncio.sleep(3600)

    async def failing() -> None:
        raise RuntimeError("ended badly")

    tasks = [asyncio.create_task(stubborn()), asyncio.create_task(failing())]
    await asyncio.sleep(0)
    stopping = asyncio.create_task(cancel_all(tasks, recheck=0.05))
    done, _ = await asyncio.wait({stopping}, timeout=5)
    assert stopping in done and all(task.done() for task in tasks)
    assert stopping.exception() is None  # what a task raised is retrieved, not raised
