"""The model contract (issue 16) in the terminal conversation: what a real model does
(text beside tool calls, empty replies, plain answers mid-task, max_tokens, refusals,
paused turns, bad arguments) reaches the person as a person expects. Every request is
checked by the fake's strict validator (the `fake` fixture fails on a violation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.settings import Settings
from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, make_settings, running_app


def by_turn(*replies: Reply | list[dict[str, Any]]) -> Any:
    """A responder that answers the n-th call with the n-th reply, then empty."""
    script = list(replies)

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        return script.pop(0) if script else habit.empty()

    return respond


async def test_text_beside_a_tool_call_is_sent_before_the_tool_runs(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(
        [text("Noted: you prefer tea."), tool("remember", content="Ann prefers tea")],
        habit.empty(),  # the usual empty end_turn after the tool result
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("I prefer tea, remember that"))
        await rec.wait_text("Noted")
        await eventually(lambda: len(fake.calls) == 2 and not app.coordinator.sessions)
    assert rec.texts() == ["Noted: you prefer tea."]  # once, and nothing for the empty reply
    # stored once, beside its call, before the tool's result
    said = [b for b in fake.calls[1].messages[1]["content"] if b["type"] == "text"]
    assert said == [text("Noted: you prefer tea.")]  # its thinking came first, kept
    assert fake.calls[1].all_text.count("Noted: you prefer tea.") == 1


async def test_an_answer_cut_at_max_tokens_arrives_whole(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> Reply:
        if habit.asked_to_continue(call):
            return Reply([text("and this is the end.")])
        return habit.cut_text("This answer is long, ")

    fake.responder = respond
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("tell me a long story"))
        await rec.wait_count(1)
        await eventually(lambda: not app.coordinator.sessions)
    assert rec.texts() == ["This answer is long, and this is the end."]
    assert len(fake.calls) == 2


async def test_a_tool_call_cut_at_max_tokens_is_not_run_but_asked_again(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.asked_to_repeat(call):
            return [tool("remember", content="short")]
        if habit.after_tool_result(call):
            return [text("Saved.")]
        return habit.cut_call("remember", content="a very long note that was cut")

    fake.responder = respond
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("remember all this"))
        await rec.wait_text("Saved.")
    called = [e["data"]["tool"] for e in events(settings.data_dir, "tool.called")]
    assert called == ["remember"]  # the cut call never ran; the repeated one ran once
    assert rec.texts() == ["Saved."]


async def test_a_refusal_is_told_and_the_conversation_goes_on(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(habit.refusal(), [text("Sure, here it is.")])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("something the model declines"))
        await rec.wait_text("declined")
        app.human.accept(inbound("something else"))
        await rec.wait_text("Sure, here it is.")
    assert [m.agent for m in rec.sent] == ["switchboard", "coordinator"]


async def test_a_paused_turn_is_continued_as_one_answer(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(habit.paused("Working on it:"), [text(" here is the answer.")])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("a long job"))
        await rec.wait_count(1)
    assert rec.texts() == ["Working on it: here is the answer."]
    assert fake.calls[1].messages[-1]["role"] == "assistant"  # the API goes on from there


async def test_bad_input_gets_an_error_text_never_a_dead_loop(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(
        [tool("no_such_tool", x=1)],
        habit.bad_json("remember"),
        [tool("remember", content=42)],
        [tool("send_message", to="human", content="see", files=["nowhere.txt"])],
        Reply([]),  # no content at all
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("go"))
        await eventually(lambda: len(fake.calls) == 5 and not app.coordinator.sessions)
        app.human.accept(inbound("still there?"))
        await eventually(lambda: len(fake.calls) == 6)
    results = [r["content"] for c in fake.calls[1:5] for r in c.tool_results()]
    assert "there is no tool 'no_such_tool'" in results[0]
    assert "bad arguments for remember" in results[1]
    assert "bad arguments for remember" in results[2]
    assert "nowhere.txt" in results[3] and "no such file" in results[3]
    assert rec.sent == []  # nothing was said, nothing is sent


async def test_whitespace_replies_send_nothing_and_stay_valid(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(habit.whitespace(), habit.whitespace(), [text("Here.")])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        for n, line in enumerate(("one", "two", "three"), 1):
            app.human.accept(inbound(line))
            await eventually(lambda n=n: len(fake.calls) == n)  # type: ignore[misc]
        await rec.wait_count(1)
    assert rec.texts() == ["Here."]


async def test_a_request_the_api_refuses_is_repaired_not_refused_forever(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> Reply:
        if "POISON" in call.all_text:
            return Reply([], status=400, error="messages: this part cannot be processed")
        return Reply([text("Fine now.")])

    fake.responder = respond
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("POISON"))
        await rec.wait_text("refused")
        app.human.accept(inbound("hello again"))
        await rec.wait_text("Fine now.")
    assert "POISON" not in fake.calls[-1].all_text


async def test_a_coordinator_at_its_turn_limit_is_not_run_again_at_restart(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MAX_TURNS="2")
    fake.responder = lambda call: [tool("list_workers")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("loop forever"))
        await rec.wait_text("steps")
        await eventually(lambda: not app.coordinator.sessions)
    calls = len(fake.calls)
    async with running_app(settings, [Recorder()]) as app:
        await eventually(lambda: not app.coordinator.sessions)
    assert len(fake.calls) == calls == 2


async def test_no_clock_line_right_after_a_tool_result(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = by_turn(Reply([tool("recall")], delay=0.3), [text("Both seen.")])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("first"))
        await eventually(lambda: len(fake.calls) == 1)
        app.human.accept(inbound("second, while the model thinks"))
        await rec.wait_text("Both seen.")
    turn = fake.calls[1].blocks()
    assert turn[0]["type"] == "tool_result"
    assert "second, while the model thinks" in str(turn[1:])
    assert fake.calls[1].clock is None  # no [Now: ...] in a turn that answers a tool call
