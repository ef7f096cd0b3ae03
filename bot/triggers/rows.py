"""Trigger rows and their runs, in the core's SQLite database.

Two tables of our own beside the core's: `triggers` (one row per trigger, its spec
as JSON) and `trigger_runs`, whose primary key (trigger, fire key) is what makes a
trigger never act twice for the same fire time: a run is claimed by inserting its
row in the same transaction as the action it takes, so a crash leaves both or
neither. The writes go through the core `Store`'s connection so that they share its
transactions; APScheduler's job table (`apscheduler_jobs`) sits in the same file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from bot.store import Store
from bot.triggers.model import TriggerSpec

SCHEMA = """
CREATE TABLE IF NOT EXISTS triggers (
    id TEXT PRIMARY KEY, type TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    source TEXT NOT NULL, created_by TEXT NOT NULL, conversation TEXT, origin_target TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, last_fired_at REAL,
    state TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS triggers_status ON triggers (status);
CREATE TABLE IF NOT EXISTS trigger_runs (
    trigger_id TEXT NOT NULL, fire_key TEXT NOT NULL, outcome TEXT NOT NULL,
    at REAL NOT NULL, detail TEXT, PRIMARY KEY (trigger_id, fire_key));
"""
JOBS_TABLE = "apscheduler_jobs"
ACTIVE = "active"


@dataclass(slots=True)
class TriggerRow:
    id: str
    spec: TriggerSpec
    status: str = ACTIVE  # active | fired | missed | cancelled | removed
    source: str = "tool"  # tool | config
    created_by: str = "coordinator"
    conversation: str | None = None  # the conversation it was created in
    origin_target: str | None = None  # that conversation's delivery target
    created_at: float = field(default_factory=time.time)
    last_fired_at: float | None = None
    state: dict[str, Any] = field(default_factory=dict)  # heartbeat bookkeeping

    @property
    def job_id(self) -> str:
        return job_id_of(self.id)


def job_id_of(trigger_id: str) -> str:
    return f"trigger:{trigger_id}"


@dataclass(slots=True)
class RunStats:
    missed: int = 0
    last_missed: float | None = None


class TriggerTable:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    def create_schema(self) -> None:
        self.db.executescript(SCHEMA)

    def save(self, row: TriggerRow) -> None:
        self.db.execute(
            "INSERT INTO triggers (id, type, spec, status, source, created_by, conversation,"
            " origin_target, created_at, updated_at, last_fired_at, state)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET"
            " type=excluded.type, spec=excluded.spec, status=excluded.status,"
            " conversation=excluded.conversation, origin_target=excluded.origin_target,"
            " updated_at=excluded.updated_at, last_fired_at=excluded.last_fired_at,"
            " state=excluded.state",
            (
                row.id,
                row.spec.type,
                json.dumps(row.spec.to_json()),
                row.status,
                row.source,
                row.created_by,
                row.conversation,
                row.origin_target,
                row.created_at,
                time.time(),
                row.last_fired_at,
                json.dumps(row.state),
            ),
        )

    def mark_run(self, row: TriggerRow) -> None:
        """After a run: its status, last fire time and (heartbeat) state; a light update."""
        self.db.execute(
            "UPDATE triggers SET status = ?, last_fired_at = ?, state = ?, updated_at = ?"
            " WHERE id = ?",
            (row.status, row.last_fired_at, json.dumps(row.state), time.time(), row.id),
        )

    def get(self, trigger_id: str) -> TriggerRow | None:
        rows = self._select("WHERE id = ?", (trigger_id,))
        return rows[0] if rows else None

    def get_many(self, trigger_ids: list[str]) -> dict[str, TriggerRow]:
        rows: dict[str, TriggerRow] = {}
        for start in range(0, len(trigger_ids), 500):  # SQLite's bound-parameter limit
            chunk = trigger_ids[start : start + 500]
            where = f"WHERE id IN ({','.join('?' * len(chunk))})"
            rows.update((r.id, r) for r in self._select(where, tuple(chunk)))
        return rows

    def active(self) -> list[TriggerRow]:
        return self._select("WHERE status = ? ORDER BY created_at", (ACTIVE,))

    def set_status(self, trigger_id: str, status: str) -> None:
        self.db.execute(
            "UPDATE triggers SET status = ?, updated_at = ? WHERE id = ?",
            (status, time.time(), trigger_id),
        )

    def claim(self, trigger_id: str, fire_key: str, outcome: str, detail: str = "") -> bool:
        """Record a run; False when this fire key was run (or missed) before."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO trigger_runs (trigger_id, fire_key, outcome, at, detail)"
            " VALUES (?, ?, ?, ?, ?)",
            (trigger_id, fire_key, outcome, time.time(), detail[:500]),
        )
        return cur.rowcount == 1

    def job_ids(self) -> set[str]:
        """Ids in APScheduler's job table, read in one query (cheap with 10,000 jobs)."""
        try:
            return {r[0] for r in self.db.execute(f"SELECT id FROM {JOBS_TABLE}")}
        except sqlite3.OperationalError:  # the job store has not created its table yet
            return set()

    def _select(self, where: str, args: tuple[Any, ...]) -> list[TriggerRow]:
        sql = (
            "SELECT id, spec, status, source, created_by, conversation, origin_target,"
            f" created_at, last_fired_at, state FROM triggers {where}"
        )
        return [_row(r) for r in self.db.execute(sql, args)]


def _row(r: tuple[Any, ...]) -> TriggerRow:
    spec = TriggerSpec.from_json(json.loads(r[1]))
    return TriggerRow(r[0], spec, r[2], r[3], r[4], r[5], r[6], r[7], r[8], json.loads(r[9]))


def run_stats(db: sqlite3.Connection) -> dict[str, RunStats]:
    """Missed runs per trigger (read-only; for status and list_triggers)."""
    stats: dict[str, RunStats] = {}
    for trigger_id, outcome, count, last in db.execute(
        "SELECT trigger_id, outcome, COUNT(*), MAX(at) FROM trigger_runs"
        " GROUP BY trigger_id, outcome"
    ):
        if outcome == "missed":
            stats[trigger_id] = RunStats(count, last)
    return stats


def next_run_times(db: sqlite3.Connection) -> dict[str, float]:
    """Next fire time (epoch) per job id, straight from APScheduler's table."""
    try:
        rows = db.execute(f"SELECT id, next_run_time FROM {JOBS_TABLE}")
        return {r[0]: r[1] for r in rows if r[1] is not None}
    except sqlite3.OperationalError:
        return {}
