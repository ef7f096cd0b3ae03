"""Crashes and restarts: parked workers resume, journaled messages are answered once.

These run `switchboard chat` as a real subprocess (stdin/stdout) and kill it with
SIGKILL, so nothing gets a chance to clean up.
"""

from __future__ import annotations

from pathlib import Path

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app
from tests.kits.proc import chat
from tests.kits.script import TeamScript


def test_terminal_chat_through_real_stdin_stdout(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text("Hi, I am the coordinator.")]
    sb = chat(tmp_path, fake.env())
    try:
        sb.expect("you are talking to the coordinator")
        sb.send("hello")
        assert sb.expect("Hi, I am") == "[coordinator] Hi, I am the coordinator."
        sb.send("/status")
        sb.expect("Switchboard: running")
        sb.expect("coordinator  coordinator  live")
    finally:
        assert sb.quit() == 0


def test_parked_worker_survives_kill_and_resumes(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    script = TeamScript()
    fake.responder = script
    first = chat(tmp_path, {**fake.env(), **database_env})
    try:
        first.send("please research GPUs")
        first.expect("[Alice asks] Data center or consumer GPUs?")
        first.settle(0.3)
    finally:
        first.kill()

    second = chat(tmp_path, {**fake.env(), **database_env})
    try:
        second.expect("you are talking to the coordinator")
        second.send("Data center only")
        line = second.expect("Report based on: Data center only")
        assert line.startswith("[coordinator] Alice finished.")
        lines = second.settle(0.5)
    finally:
        assert second.quit() == 0
    assert script.answers_seen == ["Data center only"]
    assert not any("asks]" in line for line in lines), "the question was sent again"


def test_message_journaled_before_a_crash_is_answered_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = lambda call: Reply([text("too late")], delay=30)
    first = chat(tmp_path, {**fake.env(), **database_env})
    try:
        first.expect("you are talking to the coordinator")
        first.send("what is the status of the build?")
        fake.wait_for(lambda calls: len(calls) == 1)  # the turn is in flight
    finally:
        first.kill()

    fake.responder = lambda call: [text(f"answer #{len(fake.calls)}")]
    second = chat(tmp_path, {**fake.env(), **database_env})
    try:
        second.expect("[coordinator] answer #2")
        lines = second.settle(1.0)
    finally:
        second.quit()
    assert sum("[coordinator]" in line for line in lines) == 1
    assert "what is the status of the build?" in fake.calls[1].last_text


async def test_new_app_over_same_data_dir_resumes_parked_worker(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings: Settings = make_settings(tmp_path / "data", fake, **database_env)
    script = TeamScript()
    fake.responder = script
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research please", conversation="c1"))
        await rec.wait_kind("question")

    rec2 = Recorder()
    async with running_app(settings, [rec2]) as app:
        assert app.store.agents.workers()[0].status == "parked"
        app.human.accept(inbound("Consumer", conversation="c1"))
        await rec2.wait_text("Report based on: Consumer")
    assert not any(m.kind == "question" for m in rec2.sent)


async def test_pending_journal_rows_are_routed_at_start(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    from bot.store.core import Store

    settings = make_settings(tmp_path / "data", fake, **database_env)
    store = Store(settings.database)
    store.journal(inbound("left over", message_id="x1"))  # journaled, never routed
    store.close()
    seen: list[Call] = []
    fake.responder = lambda call: (seen.append(call), [text("handled")])[1]
    rec = Recorder()
    async with running_app(settings, [rec]):
        await rec.wait_count(1)
    assert rec.texts() == ["handled"] and "left over" in seen[0].last_text
