"""Triggers from the config file (`[[schedules]]`, `[heartbeat]`), reconciled at start.

Each entry is a trigger with a stable id (`config:<name>`, `config:heartbeat`).
At start: a new entry gets a row (its job is added with the other rows); an
unchanged entry is left alone, so its job keeps its next run time and the runs it
missed while the bot was down are caught up or skipped per its policy; a changed
schedule is rescheduled from now; an entry gone from the file is removed. An entry
with `enabled = false` keeps its row, paused: it does not fire until enabled again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.core.events import EventLog
from bot.core.trigger_spec import TriggerError, TriggerSpec, build_spec
from bot.store.trigger_rows import ACTIVE, PAUSED, TriggerRow, job_id_of
from bot.store.triggers import TriggerRows
from bot.triggers.fire import SCHEDULER
from config.entries import HeartbeatConfig, ScheduleConfig
from config.settings import Settings

log = logging.getLogger(__name__)

PREFIX = "config:"
HEARTBEAT_ID = PREFIX + "heartbeat"


def schedule_spec(entry: ScheduleConfig, settings: Settings) -> TriggerSpec:
    config = {
        "cron": entry.cron,
        "agent": entry.agent,
        "missed": entry.missed,
        "grace_seconds": max(entry.grace_seconds, 1),
        "timezone": entry.timezone or settings.timezone,
    }
    return build_spec("scheduled", config, entry.action, entry.deliver_to, min_interval=0)


def heartbeat_spec(entry: HeartbeatConfig, settings: Settings) -> TriggerSpec:
    config = {
        "interval_seconds": entry.interval_seconds,
        "checklist": entry.checklist,
        "watch": entry.watch,
        "agent": entry.agent,
        "timezone": settings.timezone,
    }
    return build_spec("heartbeat", config, entry.action, entry.deliver_to, min_interval=0)


def desired(settings: Settings) -> dict[str, TriggerSpec]:
    specs: dict[str, TriggerSpec] = {}
    for entry in settings.schedules:
        try:
            specs[PREFIX + entry.name] = schedule_spec(entry, settings)
        except TriggerError as exc:  # settings validated the cron; this is the rarer rest
            log.error("config schedule %r ignored: %s", entry.name, exc)
    if settings.heartbeat is not None:
        specs[HEARTBEAT_ID] = heartbeat_spec(settings.heartbeat, settings)
    return specs


class ConfigTriggers:
    """Reconciles the config's entries with the trigger table; the engine hands over
    what a change needs to do to the schedule (`disarm` a trigger, `reschedule` a job
    from now, `regrace` a job: a new misfire grace only), never itself."""

    def __init__(
        self,
        table: TriggerRows,
        existing_jobs: set[str],
        events: EventLog,
        *,
        disarm: Callable[[str], None],
        reschedule: Callable[[str, TriggerSpec], None],
        regrace: Callable[[str, TriggerSpec], None],
    ) -> None:
        self.table = table
        self.jobs = existing_jobs
        self.events = events
        self.disarm = disarm
        self.reschedule = reschedule
        self.regrace = regrace

    def reconcile(self, settings: Settings) -> None:
        wanted = desired(settings)
        disabled = {PREFIX + e.name for e in settings.schedules if not e.enabled}
        for trigger_id, spec in wanted.items():
            self._one(trigger_id, spec, trigger_id not in disabled)
        for row in self.table.live():
            if row.source == "config" and row.id not in wanted:
                self.table.set_status(row.id, "removed")
                self.disarm(row.id)
                self.events.emit("trigger.removed", SCHEDULER, trigger_id=row.id)

    def _one(self, trigger_id: str, spec: TriggerSpec, enabled: bool = True) -> None:
        row = self.table.get(trigger_id)
        status = ACTIVE if enabled else PAUSED
        if row is not None and row.status == status and row.spec.to_json() == spec.to_json():
            return  # unchanged: its job and next run time stay as they are
        if not enabled:
            self._paused(trigger_id, spec, row)
            return
        job = job_id_of(trigger_id)
        if job in self.jobs and (row is None or row.spec.timing() != spec.timing()):
            self.reschedule(job, spec)
        elif job in self.jobs:
            self.regrace(job, spec)
        fresh = TriggerRow(
            id=trigger_id, spec=spec, status=ACTIVE, source="config", created_by=SCHEDULER
        )
        if row is not None:
            fresh.created_at, fresh.last_fired_at, fresh.state = (
                row.created_at,
                row.last_fired_at,
                row.state,
            )
        self.table.save(fresh)
        self._configured(trigger_id, spec, row)

    def _paused(self, trigger_id: str, spec: TriggerSpec, row: TriggerRow | None) -> None:
        """`enabled = false`: the row is kept (with its history), nothing fires."""
        fresh = TriggerRow(
            id=trigger_id, spec=spec, status=PAUSED, source="config", created_by=SCHEDULER
        )
        if row is not None:
            fresh.created_at, fresh.last_fired_at = row.created_at, row.last_fired_at
        self.table.save(fresh)
        self.disarm(trigger_id)  # a job of the enabled entry is gone with it
        self.jobs.discard(job_id_of(trigger_id))
        self._configured(trigger_id, spec, row)

    def _configured(self, trigger_id: str, spec: TriggerSpec, row: TriggerRow | None) -> None:
        self.events.emit(
            "trigger.configured",
            SCHEDULER,
            trigger_id=trigger_id,
            schedule=spec.describe(),
            new=row is None,
        )
