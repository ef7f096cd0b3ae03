"""Workers that recover: a task that fails on something that may pass (the database
cut off for a moment) goes on from its stored conversation, says so in its thread,
and a bounded number of times; anything else fails once, as before."""

from __future__ import annotations

from typing import Any

import pytest

from agents.team import team
from bot.store.errors import StoreUnavailable
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.script import TeamScript


class AsksUntilAnswered(TeamScript):
    """A worker that asks again whenever its question went unanswered (a model, shown
    that its ask_human call was cut off, asks again)."""

    def worker_turn(self, call: Call) -> list[dict[str, Any]]:
        if " answered: " in call.last_text:
            return super().worker_turn(call)
        return [tool("ask_human", question=self.question)]


def failing_parks(app: Any, times: int, error: Exception) -> list[int]:
    """The store refuses the worker's parking checkpoint `times` times with `error`."""
    real, failed = app.store.agents.upsert_worker, [0]

    def upsert(row: Any) -> None:
        if row.status == "parked" and failed[0] < times:
            failed[0] += 1
            raise error
        real(row)

    app.store.agents.upsert_worker = upsert
    return failed


async def test_a_worker_cut_off_from_the_database_goes_on_and_finishes(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = script = AsksUntilAnswered()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        failed = failing_parks(app, 1, StoreUnavailable("server closed the connection"))
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        await rec.wait_kind("question")
        assert failed == [1]
        told = [m.text for m in rec.sent if "may pass" in m.text]
        assert len(told) == 1 and told[0].startswith("Worker Alice hit a problem that may pass")
        assert "goes on from where it was" in told[0] and "2 more tries" in told[0]
        app.human.accept(inbound("Data center only", conversation="conv-1"))
        await rec.wait_text("Report based on")
        assert [w.status for w in app.store.agents.workers()] == ["done"]
    assert script.answers_seen == ["Data center only"]
    assert len(events(settings.data_dir, "worker.recovering")) == 1
    assert not events(settings.data_dir, "worker.failed")


async def test_a_worker_fails_for_good_after_its_last_try(
    settings: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(team, "RECOVERIES", 2)
    fake.responder = AsksUntilAnswered()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        failing_parks(app, 10, StoreUnavailable("the database is gone"))
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        await rec.wait_text("Worker Alice failed")
        assert [w.status for w in app.store.agents.workers()] == ["failed"]
    assert len(events(settings.data_dir, "worker.recovering")) == 2
    assert len(events(settings.data_dir, "worker.failed")) == 1


async def test_a_failure_that_will_not_pass_is_reported_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = TeamScript()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        failing_parks(app, 10, ValueError("a bug"))
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        await rec.wait_text("Worker Alice failed: ValueError: a bug")
    assert not events(settings.data_dir, "worker.recovering")
    assert len(events(settings.data_dir, "worker.failed")) == 1
