"""The model contract for workers (issue 16, items 2 and 4): a task ends only by
publish, stop_worker, the turn limit or a failure; a plain answer to a person goes to
that person and the work goes on; a failure reaches the person once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.settings import Settings
from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, make_settings, running_app


def coordinator(call: Call) -> list[dict[str, Any]]:
    """Spawns Alice on "research", relays her result, says nothing otherwise."""
    if "published its result" in call.last_text:
        return [text("Alice finished: " + call.last_text.split("result]: ", 1)[1])]
    if "research" in call.last_text and not call.tool_results():
        return [tool("spawn_worker", name="Alice", task="Research GPU prices")]
    return []


async def test_a_busy_worker_answers_a_question_and_publishes_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    asked: list[str] = []

    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if "how far are you" in call.last_text:
            asked.append(call.last_text)
            return [text("About halfway.")]
        if habit.ANSWERED_MARK in call.last_text:
            return [tool("publish", result="GPUs cost a lot.")]
        return Reply([tool("remember", content="step")], delay=0.1)

    fake.responder = lambda call: coordinator(call) if call.agent == "coordinator" else alice(call)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research GPUs"))
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        app.human.accept(inbound("@Alice how far are you?"))
        await rec.wait_text("Alice finished")
        await eventually(lambda: not app.coordinator.sessions and not app.team.workers)
    said = [(m.agent, m.text) for m in rec.sent]
    assert ("Alice", "About halfway.") in said
    assert said.count(("coordinator", "Alice finished: GPUs cost a lot.")) == 1
    assert len(events(settings.data_dir, "worker.completed")) == 1
    assert not any("finished: About halfway" in t for _, t in said)


async def test_a_worker_replying_text_only_is_reminded_once_then_that_is_its_result(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def alice(call: Call) -> Reply:
        if habit.reminded(call):
            return habit.empty()  # the answer was the text before; then an empty reply
        return Reply([text("Prices: high.")])

    fake.responder = lambda call: coordinator(call) if call.agent == "coordinator" else alice(call)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research GPUs"))
        await rec.wait_text("Alice finished")
    assert rec.texts("coordinator") == ["Alice finished: Prices: high."]
    alice_calls = [c for c in fake.calls if c.agent == "Alice"]
    assert len(alice_calls) == 2 and habit.reminded(alice_calls[1])
    assert "at most 40 turns" in alice_calls[0].system
    assert "Research GPU prices" in alice_calls[0].system


async def test_a_worker_at_its_turn_limit_reaches_the_person_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MAX_TURNS="3")

    def respond(call: Call) -> list[dict[str, Any]]:
        if call.agent == "coordinator":
            if "what happened" in call.last_text:
                return [text("See above.")]
            if "Switchboard notice" in call.last_text:
                return [text("Sorry, Alice hit her limit.")]  # a rewording: must not be sent
            return coordinator(call)
        return [tool("remember", content="busy")]

    fake.responder = respond
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("research GPUs"))
        await rec.wait_text("limit of 3 turns")
        await eventually(lambda: not app.team.workers)
        app.human.accept(inbound("what happened?"))
        await rec.wait_text("See above.")
    limits = [t for t in rec.texts() if "limit" in t]
    assert len(limits) == 1, rec.texts()
    # the coordinator read the notice with the next message, and was not woken for it
    coordinator_calls = [c for c in fake.calls if c.agent == "coordinator"]
    assert len(coordinator_calls) == 3
    assert "Switchboard notice" in coordinator_calls[-1].last_text
