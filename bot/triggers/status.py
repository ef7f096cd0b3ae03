"""The `Triggers` section of `switchboard status`: every active trigger with its next
fire time and its missed runs, read from the database alone (the bot may be down).

Next fire times come from APScheduler's job table; an on_idle trigger's deadline
lives only in the running process, so status shows its idle time instead.
"""

from __future__ import annotations

import time

from bot.core.readout import ago, table, when
from bot.store.core import MissingTable, Store
from bot.store.trigger_rows import job_id_of

MAX_ROWS = 200


def triggers_section(store: Store) -> str:
    try:
        rows = store.triggers.active()
    except MissingTable:  # the trigger engine never ran on this data dir
        return "Triggers: none"
    if not rows:
        return "Triggers: none"
    stats = store.triggers.run_stats()
    next_at = store.triggers.next_run_times()
    rows.sort(key=lambda r: next_at.get(job_id_of(r.id), float("inf")))
    lines = []
    for r in rows[:MAX_ROWS]:
        s = stats.get(r.id)
        nxt = next_at.get(job_id_of(r.id))
        missed = f"{s.missed} (last {ago(s.last_missed)})" if s and s.missed else "0"
        lines.append(
            [
                r.id,
                r.spec.type,
                r.spec.describe(),
                _next(nxt, r.spec.type),
                missed,
                ago(r.last_fired_at),
                r.spec.deliver_to or r.origin_target or "home",
                r.spec.action,
            ]
        )
    more = f"\n({len(rows) - MAX_ROWS} more not shown)" if len(rows) > MAX_ROWS else ""
    headers = ["id", "type", "schedule", "next fire", "missed", "last fired", "to", "action"]
    return f"Triggers ({len(rows)} active)\n" + table(headers, lines) + more


def _next(ts: float | None, type: str) -> str:
    if ts is not None:
        return when(ts) + (f" (due {ago(ts)})" if ts < time.time() else f" ({ago(ts)})")
    return {"on_event": "on event", "on_idle": "when idle"}.get(type, "-")


INTERNAL_PREFIX = "internal:"  # the engine's job id prefix for internal jobs (engine.py)


def maintenance_section(store: Store) -> str:
    """The runtime's own periodic jobs (memory distillation, team consolidation)."""
    next_at = store.triggers.next_run_times()
    jobs = sorted(
        (job.removeprefix(INTERNAL_PREFIX), ts)
        for job, ts in next_at.items()
        if job.startswith(INTERNAL_PREFIX)
    )
    if not jobs:
        return "Maintenance jobs: none"
    rows = [[name, _next(ts, "scheduled")] for name, ts in jobs]
    return "Maintenance jobs\n" + table(["job", "next run"], rows)
