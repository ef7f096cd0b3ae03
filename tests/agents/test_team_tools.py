"""The coordinator's `list_workers` and `stop_worker`, through the model's tool calls.

The fake model asks for the tool; the coordinator answers the person with what the
tool returned, so each test reads the tool's result where a person would.
"""

from __future__ import annotations

import asyncio
import time

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app

COMMANDS = {
    "start bob": tool("spawn_worker", name="Bob", task="find the region"),
    "start slow": tool("spawn_worker", name="Slow", task="think long"),
    "list them": tool("list_workers"),
    "stop bob": tool("stop_worker", name="bob"),
    "stop slow": tool("stop_worker", name="Slow"),
    "stop zed": tool("stop_worker", name="Zed"),
}


def responder(call: Call) -> list[dict] | Reply:
    if call.agent == "Bob":
        return [tool("ask_human", question="Which region?")]
    if call.agent == "Slow":
        return Reply([text("still thinking")], delay=5)  # a model call in flight when stopped
    if call.tool_results():
        return [text(f"tool: {call.last_text}")]
    for words, command in COMMANDS.items():
        if words in call.last_text:
            return [dict(command, id=f"toolu_{time.monotonic_ns()}")]
    return [text(f"heard: {call.last_text}")]


async def test_list_workers_shows_each_worker_with_its_state(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("list them"))
        await rec.wait_text("tool: No active workers.")
        app.human.accept(inbound("start bob", conversation="c1"))
        await rec.wait_kind("question")
        # in c1 (where Bob's question waits) the coordinator is named; another
        # conversation sees only that a worker works for someone else (issue 28)
        app.human.accept(inbound("@coordinator list them", conversation="c1"))
        sent = await rec.wait_text("tool: - Bob")
        app.human.accept(inbound("list them", conversation="c2"))
        await rec.wait_text("1 more work for other conversations")
    listing = next(m for m in sent if m.text.startswith("tool: - Bob"))
    assert listing.text == "tool: - Bob (parked, 1 turns): find the region"
    other = next(m for m in rec.sent if "other conversations" in m.text)
    assert "find the region" not in other.text and other.conversation == "c2"


async def test_stop_worker_stops_a_parked_worker_and_closes_its_question(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("start bob", conversation="c1"))
        await rec.wait_kind("question")
        assert len(app.store.agents.open_questions()) == 1
        app.human.accept(inbound("stop bob", conversation="c2"))  # not c2's to stop
        await rec.wait_text("Bob works for another conversation")
        app.human.accept(inbound("@coordinator stop bob", conversation="c1"))
        await rec.wait_text("tool: Worker Bob stopped.")
        assert [w.status for w in app.store.agents.workers()] == ["stopped"]
        assert app.store.agents.open_questions() == []
        assert app.team.workers == {} and app.human.directory.workers == {}
        # an answer in the question's thread now reaches the coordinator, not Bob
        bob_calls = len([c for c in fake.calls if c.agent == "Bob"])
        app.human.accept(inbound("eu-west", conversation="c1"))
        await rec.wait_text("heard: [Ann via terminal]: eu-west")
        app.human.accept(inbound("@Bob are you there?"))
        await rec.wait_text("There is no worker called Bob")
        assert len([c for c in fake.calls if c.agent == "Bob"]) == bob_calls
    stopped = events(settings.data_dir, "worker.stopped")
    assert [(e["agent_id"], e["data"]["status"]) for e in stopped] == [("bob", "stopped")]


async def test_stop_worker_cancels_a_model_call_in_flight(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("start slow"))
        await fake.until(lambda calls: any(c.agent == "Slow" for c in calls))
        started = time.monotonic()
        app.human.accept(inbound("stop slow"))
        await rec.wait_text("tool: Worker Slow stopped.")
        assert time.monotonic() - started < 4  # not after the 5 s model call
        assert [w.status for w in app.store.agents.workers()] == ["stopped"]
        await asyncio.sleep(0.1)
    assert not any("still thinking" in m.text for m in rec.sent)


async def test_stop_worker_with_no_such_worker_is_an_error_for_the_model(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("stop zed"))
        await rec.wait_text("tool: Error: no active worker called 'Zed'")
    result = next(c for c in fake.calls if c.tool_results()).tool_results()[0]
    assert result["is_error"] is True
