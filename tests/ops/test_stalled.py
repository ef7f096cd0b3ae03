"""Stalled work is seen, with a fake clock (`Stalled.check(now)`): open questions and
pending approvals are reminded in their thread after SWITCHBOARD_REMIND_AFTER, then
daily, and escalated once to SWITCHBOARD_HOME after a day; a worker in model retries
past SWITCHBOARD_STUCK_AFTER is reported once; a heartbeat sees both."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bot.triggers import heartbeat
from config.settings import Database
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, make_settings, running_app
from tests.kits.script import TeamScript
from tests.kits.tools_kit import caller, stdio_entry, tools_settings
from tests.kits.trigger_kit import EmailRecorder

HOUR = 3600.0
DAY = 86400.0
HOME = {"SWITCHBOARD_HOME": "email:lead@example.com"}


async def test_an_open_question_is_reminded_then_daily_and_escalated_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    script = TeamScript()
    fake.responder = script
    rec, home = Recorder(), EmailRecorder()
    async with running_app(
        make_settings(tmp_path, fake, **HOME, **database_env), [rec, home]
    ) as app:
        app.human.accept(inbound("please research GPUs"))
        await rec.wait_kind("question")
        [q] = app.human.directory.questions.values()
        stalled = app.ops.stalled
        stalled.check(q.asked_at + 3 * HOUR)
        stalled.check(q.asked_at + 4 * HOUR + 1)
        reminders = await rec.wait_for(lambda s: sum(m.kind == "question" for m in s) == 2)
        reminder = [m for m in reminders if m.kind == "question"][-1]
        assert reminder.question_id == q.id and "asked 4 h ago" in reminder.text
        stalled.check(q.asked_at + 10 * HOUR)  # not yet a day since the reminder
        stalled.check(q.asked_at + 4 * HOUR + DAY + 1)  # the daily one, and the escalation
        await rec.wait_for(lambda s: sum(m.kind == "question" for m in s) == 3)
        [escalation] = await home.wait_count(1)
        assert "has waited 1 day for an answer in terminal" in escalation.text
        assert escalation.question_id == q.id  # a reply to it answers the worker
        stalled.check(q.asked_at + 2 * DAY)
        assert len(home.sent) == 1  # escalated once
        app.human.accept(inbound("consumer"))
        await rec.wait_text("Report based on: consumer")
        stalled.check(q.asked_at + 9 * DAY)
        assert app.store.kv_prefixed("stalled:") == {}
    assert sum(m.kind == "question" for m in rec.sent) == 3


async def test_a_pending_approval_is_reminded_in_its_thread(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*"])
    rec = Recorder()
    async with running_app(tools_settings(tmp_path, fake, [entry], **database_env), [rec]) as app:
        await app.mcp.wait_connected(30)
        app.human.accept(inbound('call ops__restart_service {"service": "api"}'))
        await rec.wait_text("Approval needed", 30)
        [row] = app.human.approvals.pending.values()
        app.ops.stalled.check(row.requested_at + 4 * HOUR + 1)
        await rec.wait_text("still waits for approval to run ops__restart_service")
        app.human.accept(inbound("approve"))
        await rec.wait_text("result: api restarted", 30)


def worker_retries(call: Call) -> Any:
    if call.agent == "coordinator":
        if call.tool_results():
            return [text("Alice is on it.")]
        return [tool("spawn_worker", name="Alice", task="crunch the numbers")]
    return Reply([], status=529)  # the model is overloaded for the worker, for good


async def test_a_worker_in_model_retries_too_long_is_reported_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = worker_retries
    rec = Recorder()
    async with running_app(make_settings(tmp_path, fake), [rec]) as app:
        app.human.accept(inbound("go"))
        stalled = app.ops.stalled
        await eventually(lambda: "alice" in stalled.progress and
                         stalled.progress["alice"].retrying_since is not None)  # fmt: skip
        now = time.time()
        stalled.check(now + 10 * 60)  # not yet SWITCHBOARD_STUCK_AFTER (15 min)
        stalled.check(now + 16 * 60)
        sent = await rec.wait_text("Worker Alice has made no progress for 16 min")
        report = next(m for m in sent if "no progress" in m.text)
        assert "model calls have failed" in report.text and "crunch the numbers" in report.text
        stalled.check(now + 60 * 60)
        assert sum("no progress" in m.text for m in rec.sent) == 1
        await app.team.stop("Alice")
        stalled.check(time.time())  # bounded: a worker no longer running leaves the map
        assert "alice" not in stalled.progress and "coordinator" not in stalled.progress
    [stuck] = events(tmp_path, "worker.stuck")
    assert stuck["agent_id"] == "alice"


def test_the_heartbeat_sees_old_questions_stuck_workers_and_only_routed_messages(
    tmp_path: Path, database: Database
) -> None:
    from bot.core.events import EventLog
    from bot.store.core import QuestionRow, Store

    now = time.time()
    store = Store(database)
    store.agents.add_question(
        QuestionRow("q1", "alice", "Which?", "terminal", "c", [], "open", now)
    )
    store.close()
    log = EventLog(tmp_path / "events.jsonl")
    log.emit("message.received", "human", channel="slack", conversation="c", to=None,
             error="There is no worker called Bob.")  # fmt: skip
    log.close()
    watch = ["messages", "workers", "questions"]
    first = heartbeat.look(database, tmp_path / "events.jsonl",
                           {"last_run": now - 60}, watch, now + 1)  # fmt: skip
    assert first.changes == ["open question from alice (just asked): Which?"]
    later = heartbeat.look(database, tmp_path / "events.jsonl",
                           first.state, watch, now + 4 * HOUR + 5)  # fmt: skip
    assert later.changes == ["question from alice still unanswered after 4 h: Which?"]
    again = heartbeat.look(database, tmp_path / "events.jsonl",
                           later.state, watch, now + 5 * HOUR)  # fmt: skip
    assert again.quiet
