"""The APScheduler side of the engine: the scheduler, its job store and its executor.

- `BatchedJobStore`: APScheduler's SQLAlchemy job store on the data dir's SQLite file,
  with the updates and deletions the scheduler makes while processing due jobs
  collected and written in one transaction before the next read. When 1,000 jobs are
  due in the same second this turns 1,000 commits into one; nothing can run in
  between (processing is synchronous and ends with a read), so durability is as before.
- `FireTimeExecutor`: runs each job in the loop as `dispatch(job_id, fire_time)`, so
  the engine knows which fire time a run is for (its key for "never twice").
- `scheduled_job`: the module-level function jobs persist; only ids are arguments.
"""

from __future__ import annotations

import pickle
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.util import datetime_to_utc_timestamp
from sqlalchemy import bindparam, create_engine, event

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


class BatchedJobStore(SQLAlchemyJobStore):
    def __init__(self, db_path: Path) -> None:
        engine = create_engine(f"sqlite:///{db_path}")
        # The core opened the file in WAL mode; like the core's own connection, do not
        # wait for the disk on every commit.
        event.listen(engine, "connect", _sqlite_pragmas)
        super().__init__(engine=engine)
        self._updates: dict[str, dict[str, Any]] = {}
        self._removals: set[str] = set()

    def update_job(self, job: Job) -> None:
        self._updates[job.id] = {
            "_id": job.id,
            "next_run": datetime_to_utc_timestamp(job.next_run_time),
            "state": pickle.dumps(job.__getstate__(), self.pickle_protocol),
        }

    def remove_job(self, job_id: str) -> None:
        self._updates.pop(job_id, None)
        self._removals.add(job_id)

    def flush(self) -> None:
        if not self._updates and not self._removals:
            return
        updates, removals = list(self._updates.values()), list(self._removals)
        self._updates, self._removals = {}, set()
        t = self.jobs_t
        with self.engine.begin() as conn:
            if updates:
                stmt = t.update().where(t.c.id == bindparam("_id"))
                conn.execute(
                    stmt.values(next_run_time=bindparam("next_run"), job_state=bindparam("state")),
                    updates,
                )
            if removals:
                conn.execute(t.delete().where(t.c.id.in_(removals)))

    # every read and every other write sees the collected changes first
    def lookup_job(self, job_id: str) -> Job | None:
        self.flush()
        return super().lookup_job(job_id)

    def get_due_jobs(self, now: datetime) -> list[Job]:
        self.flush()
        return super().get_due_jobs(now)

    def get_next_run_time(self) -> datetime | None:
        self.flush()
        return super().get_next_run_time()

    def get_all_jobs(self) -> list[Job]:
        self.flush()
        return super().get_all_jobs()

    def add_job(self, job: Job) -> None:
        self.flush()
        super().add_job(job)

    def remove_all_jobs(self) -> None:
        self._updates, self._removals = {}, set()
        super().remove_all_jobs()

    def shutdown(self) -> None:
        self.flush()
        super().shutdown()


def make_scheduler(
    db_path: Path, dispatch: Dispatch, on_missed: Callable[[JobExecutionEvent], None]
) -> AsyncIOScheduler:
    scheduler = AsyncIOScheduler(
        jobstores={"default": BatchedJobStore(db_path)},
        executors={"default": FireTimeExecutor(dispatch)},
        job_defaults={"coalesce": True, "max_instances": MAX_INSTANCES},
        timezone=ZoneInfo("UTC"),
    )
    scheduler.add_listener(on_missed, EVENT_JOB_MISSED)
    return scheduler


def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()
