"""Config validation for schedules, internal periodic jobs, status without triggers."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.core.events import EventLog
from bot.ledger.report import full_status
from bot.store.core import Store
from bot.triggers.reconcile import ConfigTriggers
from config.entries import ScheduleConfig
from config.settings import Database, SettingsError, load_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, eventually, make_settings, running_app
from tests.kits.trigger_kit import set_next_run, trigger_settings


async def test_an_internal_job_stopped_with_the_bot_is_no_error(
    tmp_path: Path, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    """A stop while a pruning run waits for its thread cancels the job: said at INFO,
    not as a failed job's traceback (the soak's last line of log)."""
    caplog.set_level(logging.INFO)
    settings = trigger_settings(tmp_path / "data", fake)
    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.sleep(3600)

    def register(app: App) -> None:
        app.triggers.add_internal("slow", "30 3 * * *", slow, timezone="UTC")

    async with running_app(settings, [Recorder()], [register]) as app:
        run = asyncio.create_task(app.triggers._run_internal("internal:slow", "1"))
        await started.wait()
        run.cancel()
        await run  # ends, not cancelled: nothing raised into the scheduler's executor
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "internal job internal:slow stopped with the bot" in caplog.text


def test_a_bad_schedule_in_the_config_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text("[[schedules]]\nname = 'x'\ncron = '0 25 * * *'\naction = 'y'\n")
    with pytest.raises(SettingsError) as info:
        load_settings(path, {})
    assert str(info.value).startswith("config file [schedules.0.cron]: Value error, must be a")
    path.write_text("[[schedules]]\nname = 'x'\ncron = '0 9 * * *'\naction = 'y'\n" * 2)
    with pytest.raises(SettingsError, match="same name"):
        load_settings(path, {})


async def test_internal_job_keeps_its_schedule_and_catches_up_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    runs: list[float] = []

    async def distil() -> None:
        runs.append(datetime.now(UTC).timestamp())

    def register(app: App) -> None:
        app.triggers.add_internal("probe", "30 3 * * *", distil, timezone="UTC")

    async with running_app(settings, [Recorder()], [register]) as app:
        assert app.triggers.scheduler is not None
        job = app.triggers.scheduler.get_job("internal:probe")
        assert job is not None and (job.next_run_time.hour, job.next_run_time.minute) == (3, 30)
        first = job.next_run_time
    async with running_app(settings, [Recorder()], [register]) as app:
        assert app.triggers.scheduler is not None
        assert app.triggers.scheduler.get_job("internal:probe").next_run_time == first  # type: ignore[union-attr]
    set_next_run(settings.database, "internal:probe", datetime.now(UTC) - timedelta(minutes=1))
    async with running_app(settings, [Recorder()], [register]) as app:
        await eventually(lambda: len(runs) == 1)
        assert app.triggers.scheduler is not None
        again = app.triggers.scheduler.get_job("internal:probe")
        assert again is not None and again.next_run_time > datetime.now(UTC)
    async with running_app(settings, [Recorder()]) as app:  # no longer registered: removed
        assert app.triggers.scheduler is not None
        assert app.triggers.scheduler.get_job("internal:probe") is None
        # the app's own nightly memory distillation is always there
        assert app.triggers.scheduler.get_job("internal:memory-distil") is not None
    assert len(runs) == 1


def test_status_without_any_trigger(database: Database) -> None:
    store = Store(database)
    try:
        assert "Triggers: none" in full_status(store)
    finally:
        store.close()


def test_config_reconciles_through_what_the_engine_hands_it(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """`ConfigTriggers` needs no engine: the table, the jobs that exist, and the three
    schedule changes it may ask for. A new entry is saved, a changed schedule is
    rescheduled, a grace change only regraced, a disabled entry disarmed, a gone one
    removed."""
    store = Store(tmp_path / "switchboard.db")
    asked: list[tuple[str, str]] = []

    def reconcile(*entries: ScheduleConfig, jobs: set[str] | None = None) -> None:
        settings = make_settings(tmp_path, fake).model_copy(update={"schedules": list(entries)})
        ConfigTriggers(
            store.triggers, jobs or set(), EventLog(None),
            disarm=lambda t: asked.append(("disarm", t)),
            reschedule=lambda j, s: asked.append(("reschedule", j)),
            regrace=lambda j, s: asked.append(("regrace", j)),
        ).reconcile(settings)  # fmt: skip

    try:
        daily = ScheduleConfig(name="daily", cron="0 9 * * *", action="report")
        reconcile(daily)
        assert store.triggers.get("config:daily") is not None and asked == []
        jobs = {"trigger:config:daily"}
        reconcile(daily.model_copy(update={"cron": "0 10 * * *"}), jobs=jobs)
        reconcile(daily.model_copy(update={"cron": "0 10 * * *", "grace_seconds": 60}), jobs=jobs)
        reconcile(daily.model_copy(update={"enabled": False}), jobs=jobs)
        reconcile()
        assert asked == [
            ("reschedule", "trigger:config:daily"),
            ("regrace", "trigger:config:daily"),
            ("disarm", "config:daily"),
            ("disarm", "config:daily"),
        ]
        row = store.triggers.get("config:daily")
        assert row is not None and row.status == "removed"
    finally:
        store.close()
