"""The store's trigger tables: trigger rows, their runs, and APScheduler's job table.

Part of the store (the only code that speaks SQL): `Store.triggers` is one of these,
on the store's connection, so a trigger run's claim and the action it takes (bus
mail, outbox rows) share one transaction. `trigger_runs`' primary key (trigger, fire
key) is what makes a trigger never act twice for the same fire time. APScheduler's
own job table (`apscheduler_jobs`) sits in the same file; it is only read here.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bot.core.trigger_spec import TriggerSpec
from bot.store.errors import MissingTable
from bot.store.sql import Sql
from bot.store.trigger_rows import ACTIVE, RunOutcome, RunStats, TriggerRow, TriggerStatus

JOBS_TABLE = "apscheduler_jobs"
_COLUMNS = (
    "id, spec, status, source, created_by, conversation, origin_target,"
    " created_at, last_fired_at, state"
)


def decode_trigger(r: Any) -> TriggerRow:
    """A `triggers` row (selected as `_COLUMNS`) as a TriggerRow; raises when corrupt."""
    return TriggerRow(
        id=r[0],
        spec=TriggerSpec.from_json(json.loads(r[1])),
        status=r[2],
        source=r[3],
        created_by=r[4],
        conversation=r[5],
        origin_target=r[6],
        created_at=r[7],
        last_fired_at=r[8],
        state=json.loads(r[9]),
    )


class TriggerRows:
    """Trigger rows and runs in the store's database (and on its connection)."""

    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def save(self, row: TriggerRow) -> None:
        self.sql.execute(
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
        self.sql.execute(
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

    def live(self) -> list[TriggerRow]:
        """Active and paused triggers: those that may still fire."""
        return self._select("WHERE status IN ('active', 'paused') ORDER BY created_at", ())

    def set_status(self, trigger_id: str, status: TriggerStatus) -> None:
        self.sql.execute(
            "UPDATE triggers SET status = ?, updated_at = ? WHERE id = ?",
            (status, time.time(), trigger_id),
        )

    def claim(self, trigger_id: str, fire_key: str, outcome: RunOutcome, detail: str = "") -> bool:
        """Record a run; False when this fire key was run (or missed) before."""
        cur = self.sql.execute(
            "INSERT INTO trigger_runs (trigger_id, fire_key, outcome, at, detail)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (trigger_id, fire_key, outcome, time.time(), detail[:500]),
        )
        return cur.rowcount == 1

    def outcomes(self, trigger_id: str) -> list[RunOutcome]:
        """The outcomes of a trigger's runs, oldest first."""
        rows = self.sql.execute(
            "SELECT outcome FROM trigger_runs WHERE trigger_id = ? ORDER BY at", (trigger_id,)
        )
        return [r[0] for r in rows]

    def run_stats(self) -> dict[str, RunStats]:
        """Missed runs per trigger (read-only; for status and list_triggers)."""
        return {
            trigger_id: RunStats(count, last)
            for trigger_id, count, last in self.sql.execute(
                "SELECT trigger_id, COUNT(*), MAX(at) FROM trigger_runs"
                " WHERE outcome = 'missed' GROUP BY trigger_id"
            )
        }

    def job_ids(self) -> set[str]:
        """Ids in APScheduler's job table, read in one query (cheap with 10,000 jobs)."""
        try:
            return {r[0] for r in self.sql.execute(f"SELECT id FROM {JOBS_TABLE}")}
        except MissingTable:  # the job store has not created its table yet
            return set()

    def next_run_times(self) -> dict[str, float]:
        """Next fire time (epoch) per job id, straight from APScheduler's table."""
        try:
            rows = self.sql.execute(f"SELECT id, next_run_time FROM {JOBS_TABLE}")
            return {r[0]: r[1] for r in rows if r[1] is not None}
        except MissingTable:
            return {}

    def _select(self, where: str, args: tuple[Any, ...]) -> list[TriggerRow]:
        rows = self.sql.execute(f"SELECT {_COLUMNS} FROM triggers {where}", args)
        return self.sql.decode("triggers", rows, decode_trigger)
