"""Workers: spawn, ask a person, park, resume with the answer, publish, relay."""

from __future__ import annotations

import asyncio
from pathlib import Path

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.script import TeamScript


async def test_worker_asks_parks_resumes_and_result_is_relayed(
    settings: Settings, fake: FakeAnthropic
) -> None:
    script = TeamScript()
    fake.responder = script
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research GPUs", conversation="conv-1"))
        sent = await rec.wait_kind("question")
        question = next(m for m in sent if m.kind == "question")
        assert question.agent == "Alice" and question.text == script.question
        assert question.conversation == "conv-1"
        assert app.store.agents.workers()[0].status == "parked"
        assert len(app.human.directory.questions) == 1

        # a plain reply in the same conversation answers the open question
        app.human.accept(inbound("Data center only", conversation="conv-1"))
        await rec.wait_text("Report based on")
        assert [w.status for w in app.store.agents.workers()] == ["done"]
    assert script.answers_seen == ["Data center only"]
    relay = next(m for m in rec.sent if "Report based on" in m.text)
    assert relay.agent == "coordinator" and relay.conversation == "conv-1"
    kinds = [e["type"] for e in events(settings.data_dir)]
    assert "human.question" in kinds and "human.response" in kinds
    assert "worker.completed" in kinds


async def test_addressed_message_reaches_a_busy_worker_at_its_next_step(
    settings: Settings, fake: FakeAnthropic
) -> None:
    started = asyncio.Event()

    async def responder(call: Call) -> list[dict] | Reply:
        if call.agent == "coordinator":
            if "research" in call.last_text:
                return [tool("spawn_worker", name="Bob", task="long task")]
            return [text("ok")]
        if "focus on pricing" in call.all_text:
            return [tool("publish", result="focused on pricing")]
        started.set()
        return Reply([tool("send_message", to="coordinator", content="still working")], delay=0.2)

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research something"))
        await asyncio.wait_for(started.wait(), 10)
        app.human.accept(inbound("@bob focus on pricing"))
        await fake.until(
            lambda calls: any(c.agent == "Bob" and "focus on pricing" in c.all_text for c in calls)
        )
    bob_calls = [c for c in fake.calls if c.agent == "Bob"]
    seen = next(c for c in bob_calls if "focus on pricing" in c.all_text)
    assert "[Ann via terminal]: focus on pricing" in seen.all_text


async def test_broadcast_informs_but_leaves_a_parked_worker_parked(
    settings: Settings, fake: FakeAnthropic
) -> None:
    script = TeamScript()
    fake.responder = script
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research it", conversation="c1"))
        await rec.wait_kind("question")
        calls_before = len(fake.calls)
        app.human.accept(inbound("@all deadline moved up", conversation="c2"))
        await fake.until(
            lambda calls: any(
                c.agent == "coordinator" and "deadline" in c.last_text for c in calls[calls_before:]
            )
        )
        await rec.wait_text("coordinator heard:")  # the worker got the mail long before
        # the broadcast informed; it did not answer Alice's question
        assert [w.status for w in app.store.agents.workers()] == ["parked"]
        assert len(app.store.agents.open_questions()) == 1
        assert not any(c.agent == "Alice" for c in fake.calls[calls_before:])
        app.human.accept(inbound("consumer", conversation="c1"))  # a reply in the thread
        await rec.wait_text("Report based on: consumer")
    alice = [c for c in fake.calls if c.agent == "Alice"]
    assert "deadline moved up" in alice[-1].all_text  # held, then read on resuming


async def test_unknown_name_lists_the_workers(settings: Settings, fake: FakeAnthropic) -> None:
    fake.responder = TeamScript()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research it"))
        await rec.wait_kind("question")
        calls = len(fake.calls)
        app.human.accept(inbound("@Zed hello"))
        sent = await rec.wait_text("no worker called Zed")
    notice = next(m for m in sent if "Zed" in m.text)
    assert notice.text == "There is no worker called Zed. Workers: Alice."
    assert len(fake.calls) == calls  # no model saw it


async def test_bad_tool_arguments_return_an_error_to_the_model(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def responder(call: Call) -> list[dict]:
        if not call.tool_results():
            return [tool("spawn_worker", name="Alice")]  # task missing
        if len(call.messages) < 5:
            return [tool("no_such_tool", x=1), tool("spawn_worker", name="../x", task="t")]
        return [text("gave up")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("go"))
        await rec.wait_for(lambda s: "gave up" in [m.text for m in s])
        assert app.store.agents.workers() == []
    first = fake.calls[1].tool_results()[0]
    assert first["is_error"] and "'task' is a required property" in first["content"]
    second = fake.calls[2].tool_results()
    assert "there is no tool 'no_such_tool'" in second[0]["content"]
    assert "not a usable worker name" in second[1]["content"]


async def test_worker_limit_and_turn_limit(tmp_path: Path, fake: FakeAnthropic) -> None:
    settings = make_settings(tmp_path, fake, SWITCHBOARD_MAX_WORKERS="1", SWITCHBOARD_MAX_TURNS="3")

    def responder(call: Call) -> list[dict]:
        if call.agent == "coordinator":
            if not call.tool_results():
                return [
                    tool("spawn_worker", name="A", task="loop"),
                    tool("spawn_worker", name="B", task="loop"),
                ]
            return [text("spawned")]
        return [tool("send_message", to="coordinator", content="tick")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("go"))
        sent = await rec.wait_text("limit of 3 turns")
    results = fake.calls[1].tool_results()
    assert "limit of 1 active workers (SWITCHBOARD_MAX_WORKERS)" in results[1]["content"]
    assert any(m.agent == "switchboard" and "Worker A stopped" in m.text for m in sent)


async def test_a_crashing_tool_does_not_take_down_others(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def responder(call: Call) -> list[dict]:
        if call.agent == "coordinator":
            return [text("still here")]
        return [text("x")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        # a worker whose task blows up inside the runtime
        worker = app.team.spawn("Crash", "boom", "c9", "terminal")

        def explode(*args: object) -> None:
            raise RuntimeError("kaboom")

        worker.think = explode  # type: ignore[method-assign]
        sent = await rec.wait_text("kaboom")
        app.human.accept(inbound("are you alive?"))
        await rec.wait_for(lambda s: "still here" in [m.text for m in s])
        assert app.store.agents.workers()[0].status == "failed"
    assert any(m.agent == "switchboard" and "Worker Crash failed" in m.text for m in sent)


async def test_a_message_racing_a_finishing_worker_reaches_the_coordinator(
    settings: Settings, fake: FakeAnthropic
) -> None:
    async def responder(call: Call) -> list[dict] | Reply:
        if call.agent == "coordinator":
            return [text(f"coordinator got: {call.last_text}")]
        return Reply([tool("publish", result="done")], delay=0.3)

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.team.spawn("Quick", "finish fast", "c5", "terminal")
        await fake.until(lambda calls: any(c.agent == "Quick" for c in calls))
        # routed to Quick while its last turn runs; Quick publishes without a yield point
        app.human.accept(inbound("@quick one more thing", conversation="c5"))
        await rec.wait_for(
            lambda s: any("who is no longer active) one more thing" in m.text for m in s)
        )
