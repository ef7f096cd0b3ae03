"""SWITCHBOARD_MODEL_FALLBACK: a primary that keeps answering 529 past its retry budget,
and the turn goes on with the fallback: on another API (the fake Chat Completions
server) or another Claude model (the fake Anthropic, which checks thinking)."""

from __future__ import annotations

from pathlib import Path

from agents.loop.failover import FAIL_OVER_AFTER
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.openai_api import Answer, FakeOpenAI
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
