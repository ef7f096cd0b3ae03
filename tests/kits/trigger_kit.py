"""Helpers for the trigger tests: a second recording channel, time travel for a
persisted job, and settings with short minimum intervals."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from apscheduler.schedulers.blocking import BlockingScheduler

from bot.app import App
from bot.triggers.jobstore import BatchedJobStore
from config.settings import Database, Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, make_settings


class EmailRecorder(Recorder):
    """Records deliveries to `email:` targets, to tell targets apart from `terminal`."""

    kind = "email"


def trigger_settings(data_dir: Path, fake: FakeAnthropic, **env: str) -> Settings:
    return make_settings(data_dir, fake, SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS="0.1", **env)


def set_next_run(database: Database, job_id: str, when: datetime) -> None:
    """Move a persisted job's next run time, as if the clock had moved while the bot
    was down: APScheduler's job store API, with no scheduler running that could act."""
    store = BatchedJobStore(database)
    store.start(BlockingScheduler(), "default")  # never started; only lends its config
    try:
        job = store.lookup_job(job_id)
        assert job is not None, f"no job {job_id}"
        job.next_run_time = when
        store.update_job(job)
    finally:
        store.shutdown()


def next_run(app: App, trigger_id: str) -> datetime | None:
    assert app.triggers.scheduler is not None
    job = app.triggers.scheduler.get_job(f"trigger:{trigger_id}")
    return None if job is None else job.next_run_time


def outcomes(app: App, trigger_id: str) -> list[str]:
    return list(app.store.triggers.outcomes(trigger_id))
