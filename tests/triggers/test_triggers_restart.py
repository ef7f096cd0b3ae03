"""Triggers across restarts: missed runs caught up once or skipped, config schedules
reconciled without disturbing their next run, a delayed trigger pending across a
kill -9 of `switchboard chat`, and `switchboard status` from the database alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main as cli_main
from bot.triggers import build_spec
from config.settings import Settings, load_settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool, unwrap
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.proc import chat
from tests.kits.trigger_kit import EmailRecorder, next_run, outcomes, set_next_run, trigger_settings


@pytest.mark.parametrize(
    ("missed", "grace", "expected"),
    [("catch_up", 3600, ["fired"]), ("skip", 3600, ["missed"]), ("catch_up", 60, ["missed"])],
)
async def test_cron_run_missed_while_down_is_caught_up_once_or_skipped(
    tmp_path: Path,
    fake: FakeAnthropic,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    database_env: dict[str, str],
    missed: str,
    grace: int,
    expected: list[str],
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    due = (datetime.now(UTC) - timedelta(minutes=2)).replace(second=0, microsecond=0)
    cron = f"{due.minute} {due.hour} * * *"  # its latest fire time was about 2 minutes ago
    config = {"cron": cron, "action_type": "send_message", "missed": missed, "grace_seconds": grace}
    async with running_app(settings, [Recorder()]) as app:
        row = app.triggers.create(
            build_spec("scheduled", config, "Daily digest"), "coordinator", None, "terminal"
        )
    # as if the bot had been down for a day: two fire times passed, the latest 2 minutes ago
    set_next_run(settings.database, row.job_id, due - timedelta(days=1))
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await _settled(app, row.id)
        if expected == ["fired"]:
            await rec.wait_count(1)
        later = next_run(app, row.id)
        assert outcomes(app, row.id) == expected
    assert rec.texts() == (["Daily digest"] if expected == ["fired"] else [])
    assert later == due + timedelta(days=1)
    if expected == ["missed"]:
        (event,) = events(settings.data_dir, "trigger.missed")
        assert event["data"]["policy"] == missed and event["data"]["late_by"] > 60
        capsys.readouterr()
        for name, value in database_env.items():  # `status` reads the environment
            monkeypatch.setenv(name, value)
        assert cli_main(["--data-dir", str(settings.data_dir), "status"]) == 0
        status = capsys.readouterr().out
        line = next(ln for ln in status.splitlines() if ln.startswith(row.id))
        assert f"cron '{cron}' UTC" in line and " 1 (last " in line


async def _settled(app: Any, trigger_id: str) -> None:
    from tests.kits.app_kit import eventually

    await eventually(lambda: bool(outcomes(app, trigger_id)))


def _config(tmp_path: Path, cron: str | None) -> Path:
    path = tmp_path / "switchboard.toml"
    body = "[heartbeat]\ninterval_seconds = 3600\nchecklist = ['open questions']\n"
    if cron is not None:
        body += (
            "[[schedules]]\nname = 'daily-summary'\n"
            f"cron = '{cron}'\ntimezone = 'Europe/Berlin'\n"
            "action = 'Summarize the last 24 hours for the ops team.'\n"
            "deliver_to = 'email:ops@example.com'\n"
        )
    path.write_text(body)
    return path


def _settings(
    tmp_path: Path, fake: FakeAnthropic, cron: str | None, database_env: dict[str, str]
) -> Settings:
    env = {**fake.env(), "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"), **database_env}
    return load_settings(_config(tmp_path, cron), env)


def summarizer(call: Call) -> list[dict[str, Any]]:
    if call.tool_results():
        return [text("Summary for ops: " + unwrap(call.tool_results()[0]["content"]))]
    if "[Scheduled task]" in call.last_text:
        return [tool("read_activity", since="24h")]
    return [text("noted")]


async def test_config_summary_reaches_its_target_and_reconciles_at_start(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = summarizer
    job = "trigger:config:daily-summary"
    rec, mail = Recorder(), EmailRecorder()
    async with running_app(
        _settings(tmp_path, fake, "0 9 * * 1-5", database_env), [rec, mail]
    ) as app:
        app.human.accept(inbound("the deploy failed at 3am", conversation="ops-thread"))
        await rec.wait_count(1)
        assert app.triggers.scheduler is not None
        app.triggers.scheduler.modify_job(job, next_run_time=datetime.now(UTC))
        (summary,) = await mail.wait_count(1)
        first = next_run(app, "config:daily-summary")
        beat = next_run(app, "config:heartbeat")
    assert str(summary.target) == "email:ops@example.com" and summary.agent == "coordinator"
    assert "Summary for ops: Activity from" in summary.text
    assert "Ann: the deploy failed at 3am" in summary.text
    assert "coordinator -> terminal: noted" in summary.text

    async with running_app(
        _settings(tmp_path, fake, "0 9 * * 1-5", database_env), [Recorder()]
    ) as app:
        assert next_run(app, "config:daily-summary") == first  # unchanged: not re-added
        assert next_run(app, "config:heartbeat") == beat
    async with running_app(
        _settings(tmp_path, fake, "30 7 * * *", database_env), [Recorder()]
    ) as app:
        moved = next_run(app, "config:daily-summary")
        assert moved is not None and (moved.hour, moved.minute) == (7, 30)
    async with running_app(_settings(tmp_path, fake, None, database_env), [Recorder()]) as app:
        assert next_run(app, "config:daily-summary") is None
        assert app.triggers.table.get("config:daily-summary").status == "removed"  # type: ignore[union-attr]
        assert next_run(app, "config:heartbeat") == beat


def test_delayed_trigger_pending_across_a_restart_fires_after_it(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text("Reminder set.")]
        if "remind me" in call.last_text:
            return [
                tool(
                    "schedule",
                    type="delayed",
                    action="Time to check the build.",
                    config={"delay_seconds": 2, "action_type": "send_message"},
                )
            ]
        return [text("hm")]

    fake.responder = responder
    first = chat(tmp_path, {**fake.env(), **database_env})
    try:
        first.expect("you are talking to the coordinator")
        first.send("remind me to check the build")
        first.expect("[coordinator] Reminder set.")
    finally:
        first.kill()
    assert not any("check the build." in line for line in first.lines)

    second = chat(tmp_path, {**fake.env(), **database_env})
    try:
        assert second.expect("Time to check the build.") == "[coordinator] Time to check the build."
        lines = second.settle(0.5)
    finally:
        second.quit()
    assert sum("Time to check the build." in line for line in lines) == 1
