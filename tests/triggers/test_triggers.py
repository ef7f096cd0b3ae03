"""The six trigger types fire and deliver to the right target, through the real app,
the real APScheduler and the fake Anthropic API. Delays are fractions of a second."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.triggers import build_spec
from bot.triggers.fire import Shot
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app
from tests.kits.trigger_kit import EmailRecorder, next_run, outcomes, trigger_settings


def schedules_on(
    trigger: str, args: dict[str, Any] | Callable[[], dict[str, Any]], reply: str = "scheduled"
):  # type: ignore[no-untyped-def]
    """A coordinator that calls `schedule(**args)` when a person's message has `trigger`
    (`args()` when a function: made when the model answers, as a model makes them),
    answers scheduled tasks with 'task done: <task>', and anything else with an echo."""

    def responder(call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if call.tool_results():
            return [text(f"{reply}: {call.tool_results()[0]['content']}")]
        if "[Scheduled task]" in last:
            return [text("task done: " + last.split("[Scheduled task]: ", 1)[1].split("\n")[0])]
        if trigger in last:
            return [tool("schedule", **(args() if callable(args) else args))]
        return [text(f"heard: {last}")]

    return responder


async def test_delayed_reminder_is_sent_in_the_creating_conversation(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    fake.responder = schedules_on(
        "remind me",
        {
            "type": "delayed",
            "config": {"delay_seconds": 0.3, "action_type": "send_message"},
            "action": "Time to check the build.",
        },
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("remind me in a bit", conversation="c1"))
        sent = await rec.wait_text("check the build")
        reminder = next(m for m in sent if "check the build" in m.text)
        confirmation = next(m for m in sent if m.text.startswith("scheduled"))
        assert "Scheduled trigger t" in confirmation.text and "Output goes to terminal" in (
            confirmation.text
        )
        trigger_id = confirmation.text.split("Scheduled trigger ", 1)[1].split(":")[0]
        assert app.triggers.table.get(trigger_id).status == "fired"  # type: ignore[union-attr]
        assert outcomes(app, trigger_id) == ["fired"]
    assert reminder.agent == "coordinator" and reminder.conversation == "c1"
    assert sent.index(confirmation) < sent.index(reminder)


async def test_at_time_wakes_the_coordinator_who_answers_in_that_thread(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)

    def at_soon() -> dict[str, Any]:  # soon after the model answers, however slow that was
        at = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
        return {"type": "at_time", "config": {"at": at}, "action": "Run the weekly analysis"}

    fake.responder = schedules_on("at", at_soon)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("at 9 run it", conversation="thread-7"))
        sent = await rec.wait_for(lambda s: any(m.text.startswith("task done") for m in s))
    done = next(m for m in sent if m.text.startswith("task done"))
    assert done.text == "task done: Run the weekly analysis"
    assert done.conversation == "thread-7" and done.agent == "coordinator"
    task_call = next(c for c in fake.calls if "[Scheduled task]" in c.last_text)
    assert "[Ann via terminal]: at 9 run it" in task_call.all_text  # same LLM conversation


async def test_scheduled_trigger_fires_and_delivers_to_deliver_to(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    # the ops mailbox is a target the config names (SWITCHBOARD_TARGETS): open to schedules
    settings = trigger_settings(
        tmp_path / "data", fake, SWITCHBOARD_TARGETS="email:ops@example.com", **database_env
    )
    fake.responder = schedules_on(
        "every",
        {
            "type": "scheduled",
            "config": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
            "action": "Post the standup summary",
            "deliver_to": "email:ops@example.com",
        },
    )
    rec, mail = Recorder(), EmailRecorder()
    async with running_app(settings, [rec, mail]) as app:
        app.human.accept(inbound("every weekday at 9", conversation="c1"))
        await rec.wait_for(lambda s: any(m.text.startswith("scheduled") for m in s))
        (row,) = app.triggers.table.active()
        first = next_run(app, row.id)
        assert first is not None and first.hour == 9 and first.weekday() < 5
        assert str(first.tzinfo) == "Europe/Berlin"
        # bring the next run forward instead of waiting for 09:00 (APScheduler's own API)
        assert app.triggers.scheduler is not None
        app.triggers.scheduler.modify_job(
            row.job_id, next_run_time=datetime.now(UTC) + timedelta(seconds=0.2)
        )
        sent = await mail.wait_count(1)
        after = next_run(app, row.id)
    assert sent[0].text == "task done: Post the standup summary"
    assert str(sent[0].target) == "email:ops@example.com"
    assert after is not None and after.hour == 9 and after > datetime.now(UTC)


async def test_send_message_without_conversation_goes_home(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(
        tmp_path / "data", fake, SWITCHBOARD_HOME="email:home@example.com", **database_env
    )
    rec, mail = Recorder(), EmailRecorder()
    async with running_app(settings, [rec, mail]) as app:
        spec = build_spec("delayed", {"delay_seconds": 0.1, "action_type": "send_message"}, "hi")
        row = app.triggers.create(spec, "coordinator")
        sent = await mail.wait_count(1)
    assert str(sent[0].target) == "email:home@example.com" and sent[0].text == "hi"
    assert rec.sent == [] and row.conversation is None


async def test_named_worker_is_spawned_with_the_task(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.agent == "Bob":
            return [tool("publish", result="Bob checked the queue")]
        return [text(f"relay: {call.last_text}")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        spec = build_spec("delayed", {"delay_seconds": 0.1, "agent": "Bob"}, "Check the queue")
        app.triggers.create(spec, "coordinator", "c5", "terminal")
        sent = await rec.wait_text("Bob checked the queue")
    bob = next(c for c in fake.calls if c.agent == "Bob")
    assert "Your task: Check the queue" in bob.all_text
    relay = next(m for m in sent if "Bob checked the queue" in m.text)
    assert relay.conversation == "c5" and relay.agent == "coordinator"


async def test_on_event_fires_when_a_worker_publishes(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)

    def responder(call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if call.agent == "Alice":
            return [tool("publish", result="numbers are in")]
        if call.tool_results():
            return [text("ok")]
        if "[Scheduled task]" in last:
            assert "worker.completed from alice" in last
            return [text("synthesis started")]
        if "watch" in last:
            return [
                tool(
                    "schedule",
                    type="on_event",
                    action="Start the synthesis",
                    config={"event_pattern": "worker.comp*", "filter": {"agent_id": "Alice"}},
                )
            ]
        if "go" in last:
            return [tool("spawn_worker", name="Alice", task="crunch numbers")]
        return [text("noted")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("watch for Alice", conversation="c1"))
        await rec.wait_count(1)
        app.human.accept(inbound("go", conversation="c1"))
        sent = await rec.wait_for(lambda s: any(m.text == "synthesis started" for m in s))
        (row,) = app.triggers.table.active()
        await asyncio.sleep(0.2)
        assert outcomes(app, row.id) == ["fired"]  # worker.spawned / .stopped did not match
    assert next(m for m in sent if m.text == "synthesis started").conversation == "c1"


async def test_on_idle_fires_after_the_idle_time_and_rearms(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        spec = build_spec(
            "on_idle",
            {"idle_seconds": 0.3, "action_type": "send_message", "watch_agent": "worker-x"},
            "Nothing happened for a while.",
            min_interval=0.1,
        )
        row = app.triggers.create(spec, "coordinator", None, "terminal")
        await rec.wait_count(1)
        deadline = app.triggers.idle_watch.next_fire(row.id)
        assert deadline is not None
        app.events.emit("tool.called", "worker-x", tool="x")  # activity pushes it back
        pushed = app.triggers.idle_watch.next_fire(row.id)
        assert pushed is not None and pushed > deadline
        await rec.wait_count(2)
        assert len(set(outcomes(app, row.id))) == 1 and len(outcomes(app, row.id)) >= 2
    fired = [e for e in events(settings.data_dir, "trigger.fired")]
    assert fired[1]["ts"] - fired[0]["ts"] >= 0.3


async def test_heartbeat_is_quiet_until_something_changes(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    fake.responder = lambda call: [
        text("beat: " + call.last_text.split("What changed")[-1])
        if "[Scheduled task]" in call.last_text
        else text("ack")
    ]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        spec = build_spec(
            "heartbeat",
            {"interval_seconds": 0.2, "checklist": ["workers stuck?"], "watch": ["messages"]},
            "Heartbeat: check in.",
            min_interval=0.1,
        )
        row = app.triggers.create(spec, "coordinator", None, "terminal")
        await eventually(lambda: outcomes(app, row.id).count("quiet") >= 2)
        assert rec.sent == [] and fake.calls == []  # quiet: no post, no model call
        quiet_before = outcomes(app, row.id).count("quiet")
        app.human.accept(inbound("deploy is failing", conversation="ops"))
        await rec.wait_for(lambda s: any(m.text.startswith("beat:") for m in s))
        await eventually(lambda: outcomes(app, row.id)[-2:] == ["quiet", "quiet"])
        assert outcomes(app, row.id).count("quiet") >= quiet_before + 2
    beats = [m for m in rec.sent if m.text.startswith("beat:")]
    assert len(beats) == 1 and "1 message(s) from people in: ops (1)" in beats[0].text
    task = next(c for c in fake.calls if "[Scheduled task]" in c.last_text)
    assert "Checklist:\n- workers stuck?" in task.last_text
    assert len(events(settings.data_dir, "trigger.quiet")) >= 4


async def test_tools_list_cancel_and_report_bad_arguments(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    script = [
        [tool("schedule", type="weekly", config={}, action="x")],
        [tool("schedule", type="scheduled", config={"cron": "99 9 * * *"}, action="x")],
        [tool("schedule", type="at_time", config={"at": "2001-01-01T00:00:00"}, action="x")],
        [tool("schedule", type="delayed", config={}, action="x")],
        [
            tool(
                "schedule",
                type="delayed",
                config={"delay_seconds": 60},
                action="x",
                deliver_to="pager:42",
            )
        ],
        [tool("schedule", type="delayed", config={"delay_seconds": 600}, action="later")],
        [tool("list_triggers")],
        [tool("cancel_trigger", trigger_id="nope")],
    ]
    results: list[str] = []

    def responder(call: Call) -> list[dict[str, Any]]:
        results.extend(r["content"] for r in call.tool_results())
        if "cancel it" in call.last_text:
            trigger_id = results[5].split("Scheduled trigger ", 1)[1].split(":")[0]
            return [tool("cancel_trigger", trigger_id=trigger_id)]
        return script.pop(0) if script else [text("done")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("set things up"))
        await rec.wait_count(1)
        app.human.accept(inbound("cancel it"))
        await rec.wait_count(2)
        assert app.triggers.table.active() == []
    assert "'weekly' is not one of ['scheduled', 'delayed'" in results[0]
    assert "not a valid cron expression" in results[1]
    assert "is in the past" in results[2]
    assert "needs config.delay_seconds" in results[3]
    assert "unknown delivery target 'pager:42'" in results[4]
    assert results[5].startswith("Scheduled trigger t")
    assert "[delayed, tool, by coordinator]" in results[6] and "later" in results[6]
    assert "no active trigger 'nope'; active triggers: t" in results[7]
    assert results[8].endswith("cancelled.")


async def test_a_fire_time_is_acted_on_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(tmp_path / "data", fake, **database_env)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        spec = build_spec("heartbeat", {"interval_seconds": 3600}, "x")
        spec.action_type = "send_message"
        row = app.triggers.create(spec, "coordinator", None, "terminal")
        assert app.triggers.firing.fire(row, "1700000000.000000")
        assert not app.triggers.firing.fire(row, "1700000000.000000")
        await rec.wait_count(1)
        await asyncio.sleep(0.1)
    assert len(rec.sent) == 1
    assert len(events(settings.data_dir, "trigger.duplicate")) == 1


async def test_a_failing_action_does_not_undo_the_others_in_its_batch(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = trigger_settings(
        tmp_path / "data", fake, SWITCHBOARD_MAX_WORKERS="1", **database_env
    )
    fake.responder = lambda call: Reply([text("still busy")], delay=30)  # Busy never ends
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        far = {"delay_seconds": 3600}
        fine = app.triggers.create(
            build_spec("delayed", {**far, "action_type": "send_message"}, "all good"),
            "coordinator",
            None,
            "terminal",
        )
        app.team.spawn("Busy", "occupies the only worker slot", None, "terminal")
        bad = app.triggers.create(
            build_spec("delayed", {**far, "agent": "Helper"}, "needs a worker"),
            "coordinator",
            None,
            "terminal",
        )
        acted = app.triggers.firing.fire_many([Shot(bad, "1.0"), Shot(fine, "1.0")])
        sent = list(await rec.wait_for(lambda s: len(s) >= 2))
        assert acted == 1
        assert outcomes(app, bad.id) == ["failed"] and outcomes(app, fine.id) == ["fired"]
        assert app.triggers.table.get(bad.id).status == "failed"  # type: ignore[union-attr]
    notice = next(m for m in sent if m.kind == "notice")
    assert "could not act" in notice.text and "SWITCHBOARD_MAX_WORKERS" in notice.text
    assert [m.text for m in sent if m.kind != "notice"] == ["all good"]
    assert "Helper" not in app.human.directory.workers
