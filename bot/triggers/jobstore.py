"""APScheduler's SQLAlchemy job store on the data dir's SQLite file, batched.

`BatchedJobStore` collects the updates and deletions the scheduler makes while
processing due jobs and writes them in one transaction before the next read. When 1,000
jobs are due in the same second this turns 1,000 commits into one; nothing can run in
between (processing is synchronous and ends with a read), so durability is as before.
Only `make_scheduler` imports this module: SQLAlchemy loads when the scheduler starts.
"""

from __future__ import annotations

import pickle
from datetime import datetime
from pathlib import Path
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.util import datetime_to_utc_timestamp
from sqlalchemy import bindparam, create_engine, event


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


def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()
