"""The scheduler's job store: APScheduler's jobs in the store's database, batched.

`BatchedJobStore` keeps the table APScheduler's SQLAlchemy job store made
(`apscheduler_jobs`: id, next_run_time, the pickled job state), read and written with
the standard library's sqlite3: SQLAlchemy cost every start ~0.15 s and ~11 MB for
these few statements. The updates and deletions the scheduler makes while processing
due jobs are collected and written in one transaction before the next read. When 1,000
jobs are due in the same second this turns 1,000 commits into one; nothing can run in
between (processing is synchronous and ends with a read), so durability is as before.

On PostgreSQL the job store has a session of its own, which the lease's fencing (the
store's session ended by the server, bot/store/lease.py) does not reach. So it is fenced
by the lease's generation: every write transaction first reads the `leader` row and goes
on only while its generation is the one this node won; the due jobs are handed out only
then too. Once it finds another generation it writes and runs nothing more (the node
learns of its loss at its next beat and starts over): a frozen leader that wakes up
neither runs a reminder nor deletes the one-shot row the new leader will run. The row is
read without a lock: a share lock held by a frozen leader would stop the next one from
taking over, and one held by this node's own store would stop its event loop. What is
left is a leader frozen inside one of these short transactions, between the check and
its COMMIT, for longer than the lease: its COMMIT could still land.
"""

from __future__ import annotations

import logging
import pickle
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.base import BaseJobStore, ConflictingIdError
from apscheduler.util import datetime_to_utc_timestamp, utc_timestamp_to_datetime

from bot.store import sqlite
from bot.store.errors import Conflict
from config.settings import Database, is_postgres

TABLE = "apscheduler_jobs"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id VARCHAR(191) NOT NULL PRIMARY KEY, next_run_time FLOAT, job_state BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS ix_{TABLE}_next_run_time ON {TABLE} (next_run_time);
"""
#: the same table in PostgreSQL (FLOAT is double precision there too)
PG_SCHEMA = SCHEMA.replace("BLOB", "BYTEA")
SELECT = f"SELECT id, job_state FROM {TABLE}"
LEADER = "SELECT generation FROM leader WHERE name = 'bot'"

log = logging.getLogger(__name__)
#: the generation this node leads with (None: it does not lead)
Generation = Callable[[], int | None]


class JobStoreFenced(RuntimeError):
    """This node no longer leads: the job store writes nothing more."""


class BatchedJobStore(BaseJobStore):
    def __init__(self, where: Database, generation: Generation | None = None) -> None:
        super().__init__()
        self.db = _connect(where)
        self._schema = PG_SCHEMA if is_postgres(where) else SCHEMA
        self._updates: dict[str, tuple[float | None, bytes, str]] = {}
        self._removals: set[str] = set()
        #: PostgreSQL: whose generation may write (SQLite: one process, nothing to fence;
        #: none given: a store opened outside a node, by a tool or a test)
        self._generation = generation if is_postgres(where) else None
        #: why this store writes no more (None: it may)
        self.fenced: str | None = None

    def start(self, scheduler: Any, alias: str) -> None:
        super().start(scheduler, alias)
        self.db.executescript(self._schema)

    def shutdown(self) -> None:
        self.flush()
        self.db.close()

    # -- writes: updates and removals wait for the next read -------------------------
    def add_job(self, job: Job) -> None:
        self.flush()
        try:
            with self._writing() as ours:
                if not ours:
                    raise JobStoreFenced(f"job {job.id} not added: {self.fenced}")
                self.db.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?)", (job.id, *self._row(job)))
        except Conflict:
            raise ConflictingIdError(job.id) from None

    def update_job(self, job: Job) -> None:
        self._updates[job.id] = (*self._row(job), job.id)

    def remove_job(self, job_id: str) -> None:
        self._updates.pop(job_id, None)
        self._removals.add(job_id)

    def remove_all_jobs(self) -> None:
        self._updates, self._removals = {}, set()
        with self._writing() as ours:
            if ours:
                self.db.execute(f"DELETE FROM {TABLE}")

    def flush(self) -> None:
        if not self._updates and not self._removals:
            return
        updates, removals = list(self._updates.values()), [(i,) for i in self._removals]
        self._updates, self._removals = {}, set()
        with self._writing() as ours:
            if not ours:
                return  # a stale leader's changes are dropped: the new leader's stand
            self.db.executemany(
                f"UPDATE {TABLE} SET next_run_time = ?, job_state = ? WHERE id = ?", updates
            )
            self.db.executemany(f"DELETE FROM {TABLE} WHERE id = ?", removals)

    @contextmanager
    def _writing(self) -> Iterator[bool]:
        """A write transaction; it yields whether this node may write (still leads)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            ours = self._leads()
            yield ours
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT" if ours else "ROLLBACK")

    def _leads(self) -> bool:
        """SQLite: always. PostgreSQL: the `leader` row holds the generation this node won;
        once not, never again."""
        if self._generation is None:
            return True
        if self.fenced is None:
            mine = self._generation()
            row = self.db.execute(LEADER).fetchone()
            if mine is None or row is None or int(row[0]) != mine:
                self.fenced = f"generation {mine} no longer leads (the leader row says {row})"
                log.warning("the scheduler's job store is fenced: %s", self.fenced)
        return self.fenced is None

    # -- reads: every one sees the collected changes first ---------------------------
    def lookup_job(self, job_id: str) -> Job | None:
        self.flush()
        row = self.db.execute(f"SELECT job_state FROM {TABLE} WHERE id = ?", (job_id,))
        found = row.fetchone()
        return self._job(found[0]) if found else None

    def get_due_jobs(self, now: datetime) -> list[Job]:
        """The jobs to run now; none once this node no longer leads."""
        self.flush()
        if self._generation is not None and not self._leads():
            return []
        stamp = datetime_to_utc_timestamp(now)
        return self._jobs(f"{SELECT} WHERE next_run_time <= ? ORDER BY next_run_time", (stamp,))

    def get_next_run_time(self) -> datetime | None:
        self.flush()
        row = self.db.execute(f"SELECT MIN(next_run_time) FROM {TABLE}").fetchone()
        return utc_timestamp_to_datetime(row[0])

    def get_all_jobs(self) -> list[Job]:
        jobs = self._jobs(f"{SELECT} ORDER BY next_run_time", ())
        self._fix_paused_jobs_sorting(jobs)
        return jobs

    # -- rows ------------------------------------------------------------------------
    def _row(self, job: Job) -> tuple[float | None, bytes]:
        state = pickle.dumps(job.__getstate__(), pickle.HIGHEST_PROTOCOL)
        return datetime_to_utc_timestamp(job.next_run_time), state

    def _job(self, state: bytes) -> Job:
        job_state = pickle.loads(state)
        job_state["jobstore"] = self
        job = Job.__new__(Job)
        job.__setstate__(job_state)
        job._scheduler = self._scheduler
        job._jobstore_alias = self._alias
        return job

    def _jobs(self, sql: str, args: tuple[Any, ...]) -> list[Job]:
        """The jobs `sql` selects; one that cannot be restored is logged and removed."""
        self.flush()
        jobs, failed = [], []
        for job_id, state in self.db.execute(sql, args).fetchall():
            try:
                jobs.append(self._job(state))
            except BaseException:
                self._logger.exception('Unable to restore job "%s" -- removing it', job_id)
                failed.append((job_id,))
        if failed:
            with self._writing() as ours:
                if ours:
                    self.db.executemany(f"DELETE FROM {TABLE} WHERE id = ?", failed)
        return jobs


def _connect(where: Database) -> Any:
    """Its own session beside the store's: a PostgreSQL one, or the data dir's file (the
    core opened it in WAL mode; like the core's connection, not waiting for the disk on
    every commit)."""
    if is_postgres(where):
        from bot.store import postgres

        return postgres.connect(str(where))
    db = sqlite.Connection(sqlite3.connect(where, isolation_level=None, check_same_thread=False))
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    return db
