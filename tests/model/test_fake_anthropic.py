"""The fake Anthropic API plays today's thinking models as the real SDK sees them: signed
thinking blocks that must come back unmodified within a tool-use cycle, the settings
each model refuses, `models.retrieve`, refusals with their details, thinking in usage.

Every test drives the real `anthropic` SDK against the fake (tests/fakes/anthropic_api.py),
both whole (`messages.create`) and streamed (`messages.stream`) where the two differ.
This SDK has no `temperature`/`top_p`/`top_k` arguments: a caller can send them only with
`extra_body`, as these tests do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import Message

from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, redacted, text, thinking, tool
from tests.fakes.anthropic_models import MODELS
from tests.fakes.anthropic_rules import problems

SONNET_5, SONNET_5_5 = "claude-sonnet-5", "claude-sonnet-5-5"
QUESTION = {"role": "user", "content": "What does x mean?"}
TOOLS = [{"name": "lookup", "description": "Looks a word up.", "input_schema": {"type": "object"}}]
SUMMARIZED = {"type": "adaptive", "display": "summarized"}
BOTH = pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[AsyncAnthropic]:
    fake.responder = _looks_up
    async with AsyncAnthropic(base_url=fake.url, api_key="test-key", max_retries=0) as sdk:
        yield sdk


def _looks_up(call: Call) -> list[dict[str, Any]]:
    """A model that looks the word up, then answers."""
    if call.tool_results():
        return [text("x is a letter.")]
    return [text("Let me look."), tool("lookup", q="x")]


async def ask(client: AsyncAnthropic, streamed: bool = False, **request: Any) -> Message:
    request = {"model": SONNET_5, "max_tokens": 2000, "messages": [QUESTION], **request}
    if not streamed:
        return await client.messages.create(**request)
    async with client.messages.stream(**request) as stream:
        return await stream.get_final_message()


def back(message: Message) -> list[dict[str, Any]]:
    """An answer as a client sends it back: each block as the SDK dumps it."""
    return [b.model_dump(exclude_none=True) for b in message.content]


def cycle(sent: list[dict[str, Any]], answered: Message) -> list[dict[str, Any]]:
    """The conversation after `answered` called its tool, with `sent` as the assistant turn."""
    (use,) = [b for b in answered.content if b.type == "tool_use"]
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "a letter"}
    return [QUESTION, {"role": "assistant", "content": sent}, {"role": "user", "content": [result]}]


async def refused(fake: FakeAnthropic, client: AsyncAnthropic, **request: Any) -> str:
    """The fake's 400 for `request`, which it also kept as a violation (cleared here, so
    the `fake` fixture lets the test pass)."""
    with pytest.raises(anthropic.BadRequestError) as caught:
        await ask(client, **request)
    ((_, reasons),) = fake.violations
    fake.violations.clear()
    assert "; ".join(reasons) in str(caught.value)
    return "; ".join(reasons)


@BOTH
async def test_a_thinking_block_comes_first_signed_and_goes_back_unchanged(
    fake: FakeAnthropic, client: AsyncAnthropic, streamed: bool
) -> None:
    first = await ask(client, streamed, tools=TOOLS, thinking=SUMMARIZED)
    block = first.content[0]
    assert block.type == "thinking" and block.signature
    assert block.thinking == "Considering: What does x mean?"
    assert first.usage.output_tokens_details is not None
    assert 0 < first.usage.output_tokens_details.thinking_tokens < first.usage.output_tokens
    last = await ask(client, streamed, tools=TOOLS, messages=cycle(back(first), first))
    assert [b.type for b in last.content] == ["thinking", "text"]


@BOTH
async def test_the_thinking_is_omitted_by_default_yet_signed(
    client: AsyncAnthropic, streamed: bool
) -> None:
    first = await ask(client, streamed, tools=TOOLS)
    assert first.content[0].type == "thinking" and first.content[0].thinking == ""
    await ask(client, streamed, tools=TOOLS, messages=cycle(back(first), first))


async def test_a_streamed_answer_assembles_to_the_whole_one(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    call = tool("lookup", q="x")
    script = [thinking("Plan: look x up, then answer."), redacted(), call]
    details = {"type": "refusal", "category": None, "explanation": None}
    fake.responder = lambda c: Reply(script, stop_reason="refusal", stop_details=details, piece=7)
    whole, streamed = [
        (await ask(client, s, tools=TOOLS, thinking=SUMMARIZED)).model_dump() for s in (False, True)
    ]
    for message in (whole, streamed):  # fresh per answer: the id and the signatures' nonces
        message.pop("id")
        message["content"][0].pop("signature")
        message["content"][1].pop("data")
    assert streamed == whole


async def test_a_dropped_thinking_block_is_refused_in_the_apis_words(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    first = await ask(client, tools=TOOLS)
    said = [b for b in back(first) if b["type"] != "thinking"]
    why = await refused(fake, client, tools=TOOLS, messages=cycle(said, first))
    assert why.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. "
        "When `thinking` is enabled, a final `assistant` message must start with a thinking block"
    )


async def test_an_edited_thinking_block_is_refused(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    first = await ask(client, tools=TOOLS, thinking=SUMMARIZED)
    edited = back(first)
    edited[0]["thinking"] = "Considering: something else"
    why = await refused(fake, client, tools=TOOLS, messages=cycle(edited, first))
    assert "messages.1.content.0: Invalid `signature` in `thinking` block" in why
    assert "blocks in the latest assistant message cannot be modified" in why


async def test_earlier_turns_may_drop_their_thinking(client: AsyncAnthropic) -> None:
    first = await ask(client, tools=TOOLS)
    last = await ask(client, tools=TOOLS, messages=cycle(back(first), first))
    said = [b for b in back(first) if b["type"] != "thinking"]
    history = [*cycle(said, first), {"role": "assistant", "content": back(last)[1:]}]
    await ask(client, tools=TOOLS, messages=[*history, {"role": "user", "content": "Thanks!"}])


async def test_a_signature_is_bound_to_its_model(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    first = await ask(client, tools=TOOLS)
    why = await refused(
        fake, client, model=SONNET_5_5, tools=TOOLS, messages=cycle(back(first), first)
    )
    assert "messages.1.content.0: Invalid `signature` in `thinking` block" in why


async def test_scripted_thinking_and_redacted_blocks_are_issued_signed(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake.responder = lambda call: [thinking("Plan: look x up."), redacted(), tool("lookup", q="x")]
    first = await ask(client, tools=TOOLS, thinking=SUMMARIZED)
    assert [b.type for b in first.content] == ["thinking", "redacted_thinking", "tool_use"]
    assert first.content[0].thinking == "Plan: look x up."
    fake.responder = _looks_up
    await ask(client, tools=TOOLS, messages=cycle(back(first), first))
    without_redacted = [back(first)[0], back(first)[2]]
    why = await refused(fake, client, tools=TOOLS, messages=cycle(without_redacted, first))
    assert why.startswith("messages.1.content.1: `thinking` or `redacted_thinking` blocks")


async def test_thinking_disabled_on_sonnet_5_answers_as_scripted(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake.responder = lambda call: [thinking("a slip of the test"), text("Hi.")]
    answer = await ask(client, thinking={"type": "disabled"})
    assert [b.type for b in answer.content] == ["text"]
    assert answer.usage.output_tokens_details is not None
    assert answer.usage.output_tokens_details.thinking_tokens == 0


async def test_a_fake_told_not_to_think_adds_no_thinking(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake.thinks = False
    first = await ask(client, tools=TOOLS)
    assert [b.type for b in first.content] == ["text", "tool_use"]
    await ask(client, tools=TOOLS, messages=cycle(back(first), first))


@BOTH
async def test_sonnet_5_5_sends_its_notes_before_a_tool_call_as_thinking(
    client: AsyncAnthropic, streamed: bool
) -> None:
    first = await ask(client, streamed, model=SONNET_5_5, tools=TOOLS)
    assert [b.type for b in first.content] == ["thinking", "thinking", "tool_use"]
    assert first.content[1].thinking == ""  # display "omitted", Sonnet 5.5's default
    updates = await ask(
        client, streamed, model=SONNET_5_5, tools=TOOLS, thinking={"type": "between_tools"}
    )
    assert [(b.type, getattr(b, "thinking", None)) for b in updates.content] == [
        ("thinking", "Let me look."),
        ("tool_use", None),
    ]
    last = await ask(
        client,
        streamed,
        model=SONNET_5_5,
        messages=cycle(back(updates), updates),
        tools=TOOLS,
        thinking={"type": "between_tools"},
    )
    assert [b.type for b in last.content] == ["text"]


@pytest.mark.parametrize(
    ("model", "request_", "words"),
    [
        (SONNET_5_5, {"thinking": {"type": "disabled"}}, '"thinking.type.between_tools"'),
        (
            SONNET_5,
            {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
            'and "output_config.effort" to control thinking behavior.',
        ),
        (
            SONNET_5,
            {"extra_body": {"temperature": 0.5}},
            "temperature: sampling parameters are not supported",
        ),
        (
            SONNET_5_5,
            {"thinking": {"type": "between_tools"}, "output_config": {"effort": "xhigh"}},
            '"thinking.type.between_tools" is not supported with "output_config.effort" "xhigh"',
        ),
        (
            "claude-opus-5",
            {"thinking": {"type": "disabled"}, "output_config": {"effort": "max"}},
            '"thinking.type.disabled" is not supported with "output_config.effort" "max"',
        ),
        ("claude-opus-4-6", {"output_config": {"effort": "xhigh"}}, "output_config.effort"),
        ("claude-haiku-4-5", {"thinking": {"type": "adaptive"}}, '"thinking.type.adaptive"'),
        (
            "claude-haiku-4-5",
            {"extra_body": {"temperature": 0.5, "top_p": 0.9}},
            "cannot both be specified",
        ),
        (SONNET_5_5, {"tools": TOOLS, "tool_choice": {"type": "any"}}, "tool_choice: forcing"),
        (
            "claude-sonnet-4-6",
            {"thinking": {"type": "enabled", "budget_tokens": 512}},
            "budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            "claude-sonnet-4-6",
            {"thinking": {"type": "enabled", "budget_tokens": 4000}},
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
        (
            SONNET_5_5,
            {"thinking": {"type": "between_tools", "display": "summarized"}},
            "thinking.between_tools.display: Extra inputs are not permitted",
        ),
    ],
)
async def test_what_a_model_refuses_is_a_400(
    fake: FakeAnthropic, client: AsyncAnthropic, model: str, request_: dict[str, Any], words: str
) -> None:
    assert words in await refused(fake, client, model=model, **request_)


async def test_what_a_model_accepts(client: AsyncAnthropic) -> None:
    await ask(client, thinking={"type": "disabled"})
    await ask(client, extra_body={"temperature": 1.0})
    await ask(
        client,
        model=SONNET_5_5,
        output_config={"effort": "high"},
        thinking={"type": "between_tools"},
    )
    await ask(
        client, model="claude-sonnet-4-6", thinking={"type": "enabled", "budget_tokens": 1024}
    )
    await ask(client, model="claude-some-old-one", thinking={"type": "disabled"})


async def test_a_prefill_is_refused_where_the_model_refuses_it_but_a_paused_turn_goes_on(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    prefill = [QUESTION, {"role": "assistant", "content": "x is"}]
    await ask(client, messages=prefill)  # Sonnet 5 takes a prefill
    why = await refused(fake, client, model=SONNET_5_5, messages=prefill)
    assert "does not support assistant message prefill" in why
    fake.responder = lambda call: Reply([text("x is")], stop_reason="pause_turn")
    await ask(client, model=SONNET_5_5)
    await ask(client, model=SONNET_5_5, messages=prefill)


async def test_cache_control_on_a_thinking_block_is_refused(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    first = await ask(client, tools=TOOLS)
    sent = back(first)
    sent[0]["cache_control"] = {"type": "ephemeral"}
    why = await refused(fake, client, tools=TOOLS, messages=cycle(sent, first))
    assert "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted" in why


def test_thinking_blocks_are_valid_history_only_before_what_the_model_said() -> None:
    said = {"type": "text", "text": "Hi."}
    thought = {"type": "thinking", "thinking": "", "signature": "c2ln"}
    body = {"model": "m", "max_tokens": 10, "messages": [QUESTION]}
    history = [QUESTION, {"role": "assistant", "content": [thought, said]}, QUESTION]
    assert problems({**body, "messages": history}) == []
    history[1] = {"role": "assistant", "content": [said, thought]}
    assert problems({**body, "messages": history})
    history[1] = {"role": "assistant", "content": [{"type": "thinking", "thinking": ""}, said]}
    assert problems({**body, "messages": history}) == [
        "messages.1.content.0.thinking.signature: Field required"
    ]


async def test_models_retrieve_describes_a_model_and_a_test_may_add_one(
    fake: FakeAnthropic, client: AsyncAnthropic
) -> None:
    info = await client.models.retrieve(SONNET_5_5)
    assert info.max_tokens == 128_000 and info.max_input_tokens == 1_000_000
    assert info.capabilities is not None
    types = info.capabilities.thinking.types
    assert types.between_tools.supported and types.adaptive.supported
    assert not types.disabled.supported and not types.enabled.supported
    with pytest.raises(anthropic.NotFoundError):
        await client.models.retrieve("claude-new-1")
    fake.models["claude-new-1"] = MODELS[SONNET_5_5]
    assert (await client.models.retrieve("claude-new-1")).id == "claude-new-1"
    assert fake.lookups == [SONNET_5_5, "claude-new-1", "claude-new-1"]


@BOTH
async def test_a_refusal_carries_its_details(
    fake: FakeAnthropic, client: AsyncAnthropic, streamed: bool
) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Exploit development."}
    fake.responder = lambda call: Reply(
        [text("I can")], stop_reason="refusal", stop_details=details
    )
    answer = await ask(client, streamed)
    assert answer.stop_reason == "refusal" and answer.content[-1].type == "text"
    assert answer.stop_details is not None and answer.stop_details.category == "cyber"


async def test_a_fake_told_to_keep_a_few_calls_still_checks_the_thinking_cycle(
    client: AsyncAnthropic, fake: FakeAnthropic
) -> None:
    """A long soak keeps only the newest requests (each is a whole prompt); the thinking
    blocks it issued are still checked when they come back."""
    fake.keep = 2
    for _ in range(3):
        first = await ask(client, tools=TOOLS)
        await ask(client, tools=TOOLS, messages=cycle(back(first), first))
    assert len(fake.calls) in (3, 4) and not fake.violations
    dropped = [b for b in back(first) if b["type"] != "thinking"]
    with pytest.raises(anthropic.BadRequestError):
        await ask(client, tools=TOOLS, messages=cycle(dropped, first))
    assert len(fake.violations) == 1
    fake.violations.clear()  # refused as it should be: the fixture fails on any other
