"""The trigger engine: APScheduler's AsyncIOScheduler with its SQLAlchemy job store
on the data dir's SQLite database, plus the event and idle watchers.

Time triggers (`scheduled`, `delayed`, `at_time`, `heartbeat`) and internal periodic
jobs are APScheduler jobs whose only arguments are ids. Jobs keep their next run
time in the job store across restarts; start-up never re-adds an existing job
(that would reset its next run time and drop missed runs). Missed runs follow each
trigger's policy: `catch_up` coalesces them into one run if within the grace
window, `skip` drops them; either way a missed run is recorded (status shows it).

Every run goes through `_dispatch` with its scheduled fire time, handed over by
`FireTimeExecutor`: the fire time is the key that makes a run happen once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.events import JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

from bot.core.bus import Bus
from bot.core.events import Event, EventLog
from bot.core.trigger_spec import (
    DEFAULT_GRACE_SECONDS,
    TriggerSpec,
    check_cron,
    cron_trigger,
    repeats_wall_time,
    schedule_of,
)
from bot.inbox.human import HumanNode
from bot.store.core import Store
from bot.store.trigger_rows import (
    ACTIVE,
    PAUSED,
    TriggerRow,
    TriggerSource,
    TriggerStatus,
    job_id_of,
)
from bot.triggers import heartbeat
from bot.triggers.fire import SCHEDULER, Firing, Shot, Spawn
from bot.triggers.jobstore import BatchedJobStore, Generation
from bot.triggers.reconcile import ConfigTriggers
from bot.triggers.scheduling import make_scheduler, scheduled_job
from bot.triggers.watchers import EventWatch, IdleWatch, everything
from config.settings import Settings

log = logging.getLogger(__name__)

INTERNAL = "internal:"
Internal = Callable[[], Awaitable[Any]]


def fire_key(fire_time: datetime) -> str:
    """What a run is claimed under: a trigger acts at most once per key."""
    return f"{fire_time.timestamp():.6f}"


@dataclass(slots=True)
class Due:
    """A run APScheduler handed over, waiting for the batch it belongs to."""

    trigger_id: str
    fire_time: datetime
    done: asyncio.Future[TriggerRow | None]


class TriggerEngine:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        events: EventLog,
        human: HumanNode,
        bus: Bus,
        spawn: Spawn | None = None,
        generation: Generation | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.events = events
        self.human = human
        self.table = store.triggers
        self.firing = Firing(store, bus, human, events, spawn)
        self.event_watch = EventWatch(self._fire_soon, self._conversation_of)
        self.idle_watch = IdleWatch(self._fire_soon)
        self.scheduler: AsyncIOScheduler | None = None
        self._jobs: BatchedJobStore | None = None
        #: the lease generation this node leads with, which the job store's writes are
        #: fenced by on PostgreSQL (None: unfenced, SQLite's single node)
        self.generation = generation
        self._internal: dict[str, tuple[str, str, Internal]] = {}
        self._batch: list[Due] = []
        self._unsubscribe: list[Callable[[], None]] = []

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Open the job store, reconcile jobs with the trigger rows and config, run."""
        self.scheduler, self._jobs = make_scheduler(
            self.settings.database, self._dispatch, self._on_missed, self.generation
        )
        self.scheduler.start(paused=True)  # job changes below go straight to the store
        config = ConfigTriggers(self.table, self.job_ids(), self.events, disarm=self.disarm,
                                reschedule=self.reschedule, regrace=self.regrace)  # fmt: skip
        config.reconcile(self.settings)
        existing = self.job_ids()
        for row in self.table.active():
            self._arm(row, existing)
        self._reconcile_internal(existing)
        self._unsubscribe = [
            self.events.subscribe(self.event_watch.on_event),
            self.events.subscribe(self.idle_watch.on_event),
        ]
        self.scheduler.resume()

    def stop(self) -> None:
        self._flush_batch()  # runs already taken off the schedule must still act
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self.idle_watch.stop()
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self.scheduler, self._jobs = None, None

    def job_ids(self) -> set[str]:
        """Ids of the persisted jobs, read in one query (cheap with 10,000 jobs)."""
        self._flush_jobs()
        return self.table.job_ids()

    def next_fires(self) -> dict[str, float]:
        """Next fire time (epoch) per job id, read in one query."""
        self._flush_jobs()
        return self.table.next_run_times()

    def _flush_jobs(self) -> None:
        if self._jobs is not None:
            self._jobs.flush()

    # -- triggers ------------------------------------------------------------------------
    def create(
        self,
        spec: TriggerSpec,
        created_by: str,
        conversation: str | None = None,
        origin_target: str | None = None,
        *,
        source: TriggerSource = "tool",
        trigger_id: str | None = None,
    ) -> TriggerRow:
        row = TriggerRow(
            id=trigger_id or "t" + uuid.uuid4().hex[:8],
            spec=spec,
            status=ACTIVE,
            source=source,
            created_by=created_by,
            conversation=conversation,
            origin_target=origin_target,
        )
        self.table.save(row)  # the row first: a crash before the job is added is repaired at start
        self._arm(row)
        self.events.emit("trigger.created", SCHEDULER, trigger_id=row.id, trigger_type=spec.type,
                         by=created_by, schedule=spec.describe())  # fmt: skip
        return row

    def cancel(self, trigger_id: str, status: TriggerStatus = "cancelled") -> TriggerRow | None:
        row = self.table.get(trigger_id)
        if row is None or row.status != ACTIVE:
            return None
        self.table.set_status(trigger_id, status)
        self.disarm(trigger_id)
        self.events.emit("trigger." + status, SCHEDULER, trigger_id=trigger_id)
        return row

    def pause(self, trigger_id: str) -> TriggerRow | None:
        """Stop an active trigger from firing until `resume`; None if not active."""
        row = self.cancel(trigger_id, status=PAUSED)
        if row is not None:
            row.status = PAUSED
        return row

    def cancel_paused(self, trigger_id: str) -> TriggerRow | None:
        """Cancel a paused trigger (nothing is armed); None if not paused."""
        row = self.table.get(trigger_id)
        if row is None or row.status != PAUSED:
            return None
        self.table.set_status(trigger_id, "cancelled")
        self.events.emit("trigger.cancelled", SCHEDULER, trigger_id=trigger_id)
        return row

    def resume(self, trigger_id: str) -> TriggerRow | None:
        """A paused trigger fires again (a clock starts from now); None if not paused."""
        row = self.table.get(trigger_id)
        if row is None or row.status != PAUSED:
            return None
        row.status = ACTIVE
        self.table.set_status(trigger_id, ACTIVE)
        self._arm(row)
        self.events.emit("trigger.resumed", SCHEDULER, trigger_id=trigger_id)
        return row

    def disarm(self, trigger_id: str) -> None:
        self.event_watch.remove(trigger_id)
        self.idle_watch.remove(trigger_id)
        if self.scheduler is not None and self.scheduler.get_job(job_id_of(trigger_id)):
            self.scheduler.remove_job(job_id_of(trigger_id))

    def next_fire(self, row: TriggerRow) -> float | None:
        if row.spec.type == "on_idle":
            return self.idle_watch.next_fire(row.id)
        job = self.scheduler.get_job(row.job_id) if self.scheduler else None
        return job.next_run_time.timestamp() if job and job.next_run_time else None

    def _arm(self, row: TriggerRow, existing: set[str] | None = None) -> None:
        """Make a live trigger follow its clock or the event stream (idempotent).

        A time trigger whose job exists keeps it untouched (its next run time stands).
        """
        if self.scheduler is None:
            return  # start() arms every active row
        if row.spec.type == "on_event":
            self.event_watch.add(row)
        elif row.spec.type == "on_idle":
            self.idle_watch.add(row)
        elif existing is None and self.scheduler.get_job(row.job_id) is None:
            self.add_job(row.job_id, row.spec)
        elif existing is not None and row.job_id not in existing:
            self.add_job(row.job_id, row.spec)

    def add_job(self, job_id: str, spec: TriggerSpec) -> None:
        trigger = schedule_of(spec)
        assert trigger is not None and self.scheduler is not None
        self._add(job_id, trigger, spec.misfire_grace)

    def _add(self, job_id: str, trigger: BaseTrigger, grace: int) -> None:
        assert self.scheduler is not None
        self.scheduler.add_job(
            scheduled_job, trigger, args=(job_id,), id=job_id, name=job_id, misfire_grace_time=grace
        )

    def reschedule(self, job_id: str, spec: TriggerSpec) -> None:
        trigger = schedule_of(spec)
        assert trigger is not None and self.scheduler is not None
        self.scheduler.reschedule_job(job_id, trigger=trigger)
        self.regrace(job_id, spec)

    def regrace(self, job_id: str, spec: TriggerSpec) -> None:
        """The job keeps its next run time; only how late a run may still start changes."""
        if self.scheduler is not None:
            self.scheduler.modify_job(job_id, misfire_grace_time=spec.misfire_grace)

    # -- internal periodic jobs ----------------------------------------------------------
    def add_internal(
        self, job_id: str, cron: str, func: Internal, timezone: str | None = None
    ) -> None:
        """Register a periodic job of the runtime itself (e.g. memory distillation).

        `func` is any async callable; it is looked up live at each run, so it need not be
        picklable. Call before or after `start()`; the job keeps its next run time across
        restarts as long as `cron` and `timezone` stay the same. A run missed while the
        bot was down is caught up once within an hour.
        """
        zone = timezone or self.settings.timezone
        self._internal[job_id] = (check_cron(cron), zone, func)
        if self.scheduler is not None:
            self._reconcile_internal(self.job_ids(), only=job_id)

    def _reconcile_internal(self, existing: set[str], only: str | None = None) -> None:
        assert self.scheduler is not None
        for job_id in [only] if only is not None else list(self._internal):
            self._ensure_internal(job_id, existing)
        if only is None:  # at start: jobs no part registered any more
            registered = {INTERNAL + i for i in self._internal}
            for stale in {j for j in existing if j.startswith(INTERNAL)} - registered:
                self.scheduler.remove_job(stale)

    def _ensure_internal(self, job_id: str, existing: set[str]) -> None:
        """Add the job, or reschedule it if its cron or zone changed; else leave it be."""
        assert self.scheduler is not None
        cron, zone, _ = self._internal[job_id]
        trigger = cron_trigger(cron, ZoneInfo(zone))
        full = INTERNAL + job_id
        job = self.scheduler.get_job(full) if full in existing else None
        if job is None:
            self._add(full, trigger, DEFAULT_GRACE_SECONDS)
        elif repr(job.trigger) != repr(trigger):
            self.scheduler.reschedule_job(full, trigger=trigger)

    # -- running -------------------------------------------------------------------------
    async def _dispatch(self, job_id: str, fire_time: datetime) -> None:
        """One run of a job. Runs submitted together (due in the same second) are looked
        up and act in one transaction: queued here, flushed once all have queued."""
        key = fire_key(fire_time)
        if job_id.startswith(INTERNAL):
            await self._run_internal(job_id, key)
            return
        loop = asyncio.get_running_loop()
        due = Due(job_id.removeprefix("trigger:"), fire_time, loop.create_future())
        self._batch.append(due)
        if len(self._batch) == 1:  # every run submitted with this one queues before it
            loop.call_soon(self._flush_batch)
        heartbeat_row = await due.done
        if heartbeat_row is not None:  # it reads the event log first, off the loop
            await self._heartbeat(heartbeat_row, key)

    def _flush_batch(self) -> None:
        batch, self._batch = self._batch, []
        shots: list[Shot] = []
        try:
            rows = self.table.get_many([d.trigger_id for d in batch])
            for due in batch:
                shot = self._shot(due, rows.get(due.trigger_id))
                if shot is not None:
                    shots.append(shot)
            self.firing.fire_many(shots)
        finally:
            for due in batch:
                if not due.done.done():
                    due.done.set_result(None)

    def _shot(self, due: Due, row: TriggerRow | None) -> Shot | None:
        key = fire_key(due.fire_time)
        if row is None or row.status != ACTIVE:
            log.warning("trigger %s is not active; its job is removed", due.trigger_id)
            self.disarm(due.trigger_id)
        elif row.spec.type == "heartbeat":
            due.done.set_result(row)
        elif repeats_wall_time(row.spec, due.fire_time):
            self.events.emit("trigger.repeated_time", SCHEDULER, trigger_id=row.id, fire_key=key)
        else:
            return Shot(row, key)
        return None

    async def _heartbeat(self, row: TriggerRow, key: str) -> None:
        state = row.state or {"last_run": row.created_at}
        watch, checklist = row.spec.config["watch"], row.spec.config["checklist"]
        only = None if everything(row) else row.conversation  # a person's: its own only
        found = await asyncio.to_thread(
            heartbeat.look, self.settings.database, self.events.path, state, watch, time.time(),
            self.settings.remind_after, only,
        )  # the event log is a file: read it off the loop  # fmt: skip
        row.state = {**state, **found.state}
        if found.quiet:
            self.firing.quiet(row, key, f"nothing changed since {found.since:.0f}")
        else:
            note = heartbeat.wake_note(found, checklist, row.spec.config["interval_seconds"])
            self.firing.fire(row, key, note)

    async def _run_internal(self, job_id: str, key: str) -> None:
        entry = self._internal.get(job_id.removeprefix(INTERNAL))
        if entry is None or not self.table.claim(job_id, key, "fired"):
            return
        self.events.emit("trigger.internal", SCHEDULER, job=job_id, fire_key=key)
        try:
            await entry[2]()
        except asyncio.CancelledError:  # the bot stops mid-run: its next run goes on
            log.info("internal job %s stopped with the bot", job_id)
        except Exception as exc:
            log.exception("internal job %s failed", job_id)
            self.events.emit("trigger.failed", SCHEDULER, trigger_id=job_id, error=str(exc))

    def _conversation_of(self, event: Event) -> str | None:
        """The conversation an event belongs to: its own field, else the origin of the
        worker that emitted it (a worker's events are its conversation's)."""
        found = event.data.get("conversation")
        if isinstance(found, str):
            return found
        origin = self.human.directory.origins.get(event.agent_id.lower())
        return origin.conversation if origin is not None else None

    def _fire_soon(self, row: TriggerRow, key: str, note: str) -> None:
        current = self.table.get(row.id)  # it may have been cancelled since it matched
        if current is not None and current.status == ACTIVE:
            self.firing.fire(current, key, note)

    def _on_missed(self, ev: JobExecutionEvent) -> None:
        late_by = time.time() - ev.scheduled_run_time.timestamp()
        key = fire_key(ev.scheduled_run_time)
        if ev.job_id.startswith(INTERNAL):
            self.table.claim(ev.job_id, key, "missed", f"late by {late_by:.0f}s")
            return
        row = self.table.get(ev.job_id.removeprefix("trigger:"))
        if row is not None:
            self.firing.missed(row, key, late_by)
