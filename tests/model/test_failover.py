"""SWITCHBOARD_MODEL_FALLBACK: a primary that keeps answering 529 past its retry budget,
and the turn goes on with the fallback: on another API (the fake Chat Completions
server) or another Claude model (the fake Anthropic, which checks thinking)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.loop.failover import FAIL_OVER_AFTER
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text
from tests.fakes.openai_api import Answer, ChatCall, FakeOpenAI
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.openai_kit import MODEL

SDK_TRIES = 3  # the anthropic SDK's own: the request and two retries


async def test_a_primary_that_stays_overloaded_fails_over_to_another_api(
    tmp_path: Path, fake: FakeAnthropic, openai_fake: FakeOpenAI
) -> None:
    fake.fail(529, times=1000)
    openai_fake.responder = lambda call: Answer(f"fallback heard: {call.last_text[-20:]}")
    settings = make_settings(
        tmp_path, fake, SWITCHBOARD_MODEL_FALLBACK=f"{MODEL}, claude-opus-5", **openai_fake.env()
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("are you there?"))
        await rec.wait_text("fallback heard:", timeout=60)
        metrics = app.ops.metrics.render().decode()
    assert f'switchboard_llm_failovers_total{{model="{MODEL}"}} 1.0' in metrics
    moved = events(tmp_path, "llm.failover")
    assert [(e["data"]["previous"], e["data"]["model"]) for e in moved] == [
        ("claude-sonnet-5", MODEL)
    ]
    assert len(fake.calls) == FAIL_OVER_AFTER * SDK_TRIES  # then no more to the primary
    assert len(openai_fake.calls) == 1
    assert len(events(tmp_path, "llm.unavailable")) == FAIL_OVER_AFTER


async def test_the_next_turn_goes_back_to_the_primary_without_the_fallbacks_thinking(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    def answer(call: Call) -> list[dict[str, str]]:
        return [text(f"{call.body['model']} heard: {call.last_text[-12:]}")]

    fake.responder = answer
    fake.fail(529, times=FAIL_OVER_AFTER * SDK_TRIES)
    settings = make_settings(tmp_path, fake, SWITCHBOARD_MODEL_FALLBACK="claude-opus-5")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("first question"))
        await rec.wait_text("claude-opus-5 heard:", timeout=60)
        app.human.accept(inbound("second question"))
        await rec.wait_text("claude-sonnet-5 heard:", timeout=60)
    last = fake.calls[-1]
    assert last.body["model"] == "claude-sonnet-5"
    sent = [b.get("type") for m in last.messages if m["role"] == "assistant" for b in m["content"]]
    assert "thinking" not in sent and "text" in sent  # opus's thinking left out, its words kept
    assert len(events(tmp_path, "llm.failover")) == 1


def test_a_thinking_block_another_model_signed_is_dropped_on_its_400() -> None:
    from agents.loop.failover import foreign_thinking
    from agents.model.llm import ModelError

    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "other-model"},
            {"type": "text", "text": "hello"},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]  # fmt: skip
    other = ModelError("HTTP 400: messages.1.content.0: Invalid `signature` in `thinking` block")
    assert not foreign_thinking(messages, ModelError("HTTP 400: messages: too long"))
    assert messages[1]["content"][0]["type"] == "thinking"
    assert foreign_thinking(messages, other)
    assert messages[1]["content"] == [{"type": "text", "text": "hello"}]


def declines_on(model: str) -> Any:
    """A responder: `model` declines as a streaming classifier does (text so far, then
    `stop_reason: refusal` with its `stop_details`); any other model answers."""

    def respond(call: Call) -> Reply | list[dict[str, str]]:
        if call.body["model"] == model:
            why = "This request was declined because it could enable cyber harm."
            details = {"type": "refusal", "category": "cyber", "explanation": why}
            return Reply([text("Hello..")], stop_reason="refusal", stop_details=details)
        return [text(f"{call.body['model']} heard: {call.last_text[-15:]}")]

    return respond


async def test_a_declined_turn_goes_to_the_fallback_once_and_the_person_hears_its_answer(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """Anthropic's docs (refusals and fallback): the same request usually gets an answer
    from another Claude model. The refused text never reaches the person; the next turn
    starts on the primary again (which declines again here: it moves again)."""
    fake.responder = declines_on("claude-sonnet-5")
    settings = make_settings(tmp_path, fake, SWITCHBOARD_MODEL_FALLBACK="claude-opus-5")
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("first question"))
        await rec.wait_text("claude-opus-5 heard:", timeout=30)
        app.human.accept(inbound("second question"))
        await rec.wait_text("heard: second question", timeout=30)
        metrics = app.ops.metrics.render().decode()
    models = [call.body["model"] for call in fake.calls]
    assert models == ["claude-sonnet-5", "claude-opus-5", "claude-sonnet-5", "claude-opus-5"]
    assert fake.calls[1].messages == fake.calls[0].messages  # the same request, moved
    said = [t.partition(" heard:") for t in rec.texts()]
    assert [(who, what.strip()) for who, _, what in said] == [
        ("claude-opus-5", "first question"), ("claude-opus-5", "second question")
    ]  # fmt: skip
    assert not any("Hello.." in t for t in rec.texts())  # the refused text is not an answer
    moved = [e["data"] for e in events(tmp_path, "llm.failover")]
    assert [(d["previous"], d["model"], d["reason"]) for d in moved] == [
        ("claude-sonnet-5", "claude-opus-5", "refusal"),
        ("claude-sonnet-5", "claude-opus-5", "refusal"),
    ]
    assert "cyber" in moved[0]["error"]
    assert 'switchboard_llm_failovers_total{model="claude-opus-5"} 2.0' in metrics
    assert events(tmp_path, "llm.declined") == []


async def test_a_fallback_that_declines_too_ends_the_turn_declined_after_one_move(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> Reply:
        return Reply([], stop_reason="refusal", stop_details={"type": "refusal"})

    fake.responder = respond
    settings = make_settings(
        tmp_path, fake, SWITCHBOARD_MODEL_FALLBACK="claude-opus-5, claude-haiku-5-5"
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("something every model declines"))
        await rec.wait_text("declined", timeout=30)
    assert [call.body["model"] for call in fake.calls] == ["claude-sonnet-5", "claude-opus-5"]
    assert len(events(tmp_path, "llm.failover")) == 1  # once per turn
    assert len(events(tmp_path, "llm.declined")) == 1


async def test_without_a_fallback_a_declined_turn_is_declined_as_before(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = declines_on("claude-sonnet-5")
    rec = Recorder()
    async with running_app(make_settings(tmp_path, fake), [rec]) as app:
        app.human.accept(inbound("first question"))
        await rec.wait_text("declined", timeout=30)
    assert len(fake.calls) == 1 and events(tmp_path, "llm.failover") == []


async def test_an_openai_primarys_history_reaches_an_anthropic_fallback_as_the_api_takes_it(
    tmp_path: Path, fake: FakeAnthropic, openai_fake: FakeOpenAI
) -> None:
    """Mid-task on an OpenAI-compatible primary: a call whose arguments are not JSON,
    under an id Anthropic's pattern refuses (`functions.remember:0`, as Kimi writes
    them), and a parallel call with a plain id; the primary goes down and the turn goes
    on with Claude. The fake Anthropic API refuses what the real one would (a non-object
    `input`, an id off its pattern, a tool-use cycle without thinking on a thinking
    model), so the history must arrive translated: the calls and their results kept."""
    bad = "{content: 'Ann likes tea'"  # not JSON

    def primary(call: ChatCall) -> Answer:
        if call.tool_results():
            openai_fake.fail(500, times=1000)  # down from now on
            return Answer("", shape="no_finish")
        calls = [("remember", bad), ("remember", '{"content": "Ann likes green tea"}')]
        return Answer("Noting that.", calls, ids=["functions.remember:0", "call_ok_1"])

    openai_fake.responder = primary
    fake.responder = lambda call: [text("Claude took over: noted.")]
    settings = make_settings(
        tmp_path, fake, SWITCHBOARD_MODEL=MODEL, SWITCHBOARD_MODEL_FALLBACK="claude-opus-5",
        **openai_fake.env(),
    )  # fmt: skip
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("remember that I like tea"))
        await rec.wait_text("Claude took over", timeout=60)
    assert not fake.violations
    (call,) = fake.calls
    said = json.dumps(call.messages)
    assert json.dumps(bad) in said  # the arguments as the model wrote them
    assert "arguments must be a JSON object" in said  # the toolbox's answer to it, kept
    assert "arguments_as_written" in said
    assert "Ann likes green tea" in said
    assert "functions.remember:0" not in said  # no id off Anthropic's pattern
    assert [e["data"]["model"] for e in events(tmp_path, "llm.failover")] == ["claude-opus-5"]


def test_the_translation_to_anthropics_form_keeps_ids_paired_and_leaves_good_requests_alone() -> (
    None
):
    from agents.model.providers.anthropic_wire import anthropic_form, tool_id

    good = {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
    ]}  # fmt: skip
    assert anthropic_form(good) is good
    odd = {"messages": [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "fn.t:0", "name": "t", "input": "[1, 2"},
            {"type": "tool_use", "id": "fn.t:1", "name": "t", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "fn.t:0"},
                                     {"type": "tool_result", "tool_use_id": "fn.t:1"}]},
    ]}  # fmt: skip
    sent = anthropic_form(odd)
    uses, results = sent["messages"][0]["content"], sent["messages"][1]["content"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert uses[0]["id"] != uses[1]["id"] and uses[0]["id"] == tool_id("fn.t:0")
    assert uses[0]["input"] == {"arguments_as_written": "[1, 2"}
    assert odd["messages"][0]["content"][0]["input"] == "[1, 2"  # the stored one unchanged
