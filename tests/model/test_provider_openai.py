"""The `openai:` provider: the real openai SDK against the fake Chat Completions server
(tests/fakes/openai_api.py), through the runtime's one `Provider`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.model.llm import ModelError, ModelUnavailable
from tests.fakes.openai_api import Answer, FakeOpenAI
from tests.kits.openai_kit import openai_provider

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a word up.",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}},
    }
]
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}
ASKED = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


async def test_text_streams_and_comes_back_as_blocks(openai_fake: FakeOpenAI) -> None:
    openai_fake.responder = lambda call: Answer("Hello there, how can I help you today?")
    llm = openai_provider(openai_fake)
    heard: list[str] = []
    reply = await llm.complete("You are helpful.", TOOLS, ASKED, on_text=heard.append)
    await llm.close()
    assert reply.content == [{"type": "text", "text": "Hello there, how can I help you today?"}]
    assert reply.stop_reason == "end_turn"
    assert len(heard) > 3 and "".join(heard) == reply.text
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    body = openai_fake.calls[0].body
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "You are helpful."}
    assert body["tools"][0]["function"]["name"] == "lookup"


async def test_parallel_calls_come_back_in_order_with_their_arguments(
    openai_fake: FakeOpenAI,
) -> None:
    openai_fake.responder = lambda call: Answer(
        "Looking both up.", calls=[("lookup", '{"word": "alpha"}'), ("lookup", '{"word": "beta"}')]
    )
    llm = openai_provider(openai_fake)
    reply = await llm.complete("s", TOOLS, ASKED)
    await llm.close()
    assert reply.stop_reason == "tool_use"
    assert [c["input"] for c in reply.tool_calls] == [{"word": "alpha"}, {"word": "beta"}]
    assert len({c["id"] for c in reply.tool_calls}) == 2
    assert reply.text == "Looking both up."


@pytest.mark.parametrize(
    ("finish", "stop"),
    [("length", "max_tokens"), ("content_filter", "refusal"), ("stop", "end_turn")],
)
async def test_finish_reason_maps_to_the_model_contract(
    openai_fake: FakeOpenAI, finish: str, stop: str
) -> None:
    openai_fake.responder = lambda call: Answer("Partial answ", finish=finish)
    llm = openai_provider(openai_fake)
    reply = await llm.complete("s", [], ASKED)
    await llm.close()
    assert reply.stop_reason == stop
    if stop == "refusal":
        assert reply.stop_details == {
            "type": "refusal",
            "explanation": "finish_reason: content_filter",
        }


async def test_arguments_that_are_not_json_stay_text_for_the_toolbox(
    openai_fake: FakeOpenAI,
) -> None:
    openai_fake.responder = lambda call: Answer(calls=[("lookup", '{"word": "unterminated')])
    llm = openai_provider(openai_fake)
    reply = await llm.complete("s", TOOLS, ASKED)
    await llm.close()
    assert reply.tool_calls[0]["input"] == '{"word": "unterminated'


@pytest.mark.parametrize("shape", ["no_finish", "no_choices"])
async def test_a_stream_that_does_not_finish_is_unavailable_not_lost(
    openai_fake: FakeOpenAI, shape: str
) -> None:
    openai_fake.responder = lambda call: Answer("cut off mid", shape=shape)
    llm = openai_provider(openai_fake)
    with pytest.raises(ModelUnavailable, match=r"finish_reason|no choice"):
        await llm.complete("s", [], ASKED)
    await llm.close()


async def test_a_json_answer_to_a_stream_is_a_clear_error(openai_fake: FakeOpenAI) -> None:
    openai_fake.responder = lambda call: Answer("plain", shape="json")
    llm = openai_provider(openai_fake)
    with pytest.raises(ModelError, match="did not answer a streamed request with a stream"):
        await llm.complete("s", [], ASKED)
    await llm.close()


@pytest.mark.parametrize(("status", "error"), [(503, ModelUnavailable), (400, ModelError)])
async def test_http_errors_are_mapped(
    openai_fake: FakeOpenAI, status: int, error: type[Exception]
) -> None:
    openai_fake.fail(status, times=5)
    llm = openai_provider(openai_fake)
    with pytest.raises(error, match=f"HTTP {status}"):
        await llm.complete("s", [], ASKED)
    await llm.close()


async def test_history_is_translated_thinking_dropped_images_kept(openai_fake: FakeOpenAI) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": PNG},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "secret musing", "signature": "sig"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "png"}},
            {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"word": "img"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a picture format"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
             "content": [{"type": "text", "text": "no such word"}]},
        ]},
    ]  # fmt: skip
    llm = openai_provider(openai_fake)
    await llm.complete("s", TOOLS, history)
    await llm.close()
    sent = openai_fake.calls[0].body["messages"]
    assert "secret musing" not in json.dumps(sent) and "cache_control" not in json.dumps(sent)
    assert sent[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBOR"},
    }
    assert sent[2]["content"] == "Let me look."
    assert [c["function"]["arguments"] for c in sent[2]["tool_calls"]] == [
        '{"word": "png"}',
        '{"word": "img"}',
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "a picture format"}
    assert sent[4]["content"] == "Error: no such word"


def test_the_sdk_is_not_imported_for_an_anthropic_model() -> None:
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from bot.app import App\n"
        "from config.settings import load_settings\n"
        "s = load_settings(None, {'ANTHROPIC_API_KEY': 'k', 'SWITCHBOARD_DATA_DIR': sys.argv[1]})\n"
        "app = App(s, []); app.build()\n"
        "asyncio.run(app.llm.warm())\n"
        "print('openai' in sys.modules)\n"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as data:
        out = subprocess.run([sys.executable, "-c", code, data], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
