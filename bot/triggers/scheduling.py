"""The APScheduler side of the engine: the scheduler, its job store and its executor.

- `make_scheduler`: the scheduler on `BatchedJobStore` (bot/triggers/jobstore.py).
- `FireTimeExecutor`: runs each job in the loop as `dispatch(job_id, fire_time)`, so
  the engine knows which fire time a run is for (its key for "never twice").
- `scheduled_job`: the module-level function jobs persist; only ids are arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.job import Job
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.triggers.jobstore import BatchedJobStore, Generation
from config.settings import Database

#: at most this many runs of one job at once (a slow heartbeat overlapping itself)
MAX_INSTANCES = 3
Dispatch = Callable[[str, datetime], Awaitable[None]]


async def scheduled_job(*ids: str) -> None:
    """The job function APScheduler persists. `FireTimeExecutor` never calls it: it
    hands the run to the live engine with its fire time instead."""
    raise RuntimeError(f"job {ids} ran outside the trigger engine's executor")


class _Run:
    """A job as APScheduler's runner sees it, calling `func` instead of the stored one."""

    def __init__(self, job: Job, func: Callable[[], Awaitable[None]]) -> None:
        self._job = job
        self.func = func
        self.args: tuple[()] = ()
        self.kwargs: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._job, name)

    def __str__(self) -> str:
        return str(self._job)


class FireTimeExecutor(AsyncIOExecutor):
    """Every job coalesces, so one submission carries one run time: the newest due one.
    APScheduler's own runner still decides whether it is missed (grace time)."""

    def __init__(self, dispatch: Dispatch) -> None:
        super().__init__()
        self._dispatch = dispatch

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        func = partial(self._dispatch, job.id, run_times[-1])
        super()._do_submit_job(_Run(job, func), run_times)


def make_scheduler(
    where: Database,
    dispatch: Dispatch,
    on_missed: Callable[[JobExecutionEvent], None],
    generation: Generation | None = None,
) -> tuple[AsyncIOScheduler, BatchedJobStore]:
    jobs = BatchedJobStore(where, generation)
    scheduler = AsyncIOScheduler(
        jobstores={"default": jobs},
        executors={"default": FireTimeExecutor(dispatch)},
        job_defaults={"coalesce": True, "max_instances": MAX_INSTANCES},
        timezone=ZoneInfo("UTC"),
    )
    scheduler.add_listener(on_missed, EVENT_JOB_MISSED)
    return scheduler, jobs
