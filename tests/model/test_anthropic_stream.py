"""A streamed answer put together from the Messages API's raw events
(agents/model/providers/anthropic_stream.py): through the real SDK against the fake API,
and event by event with the SDK's own event types for what the fake does not send."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent

from agents.model.llm import Provider
from agents.model.providers import Connector, Endpoints
from agents.model.providers.anthropic_stream import Reading
from agents.model.providers.base import ModelUnavailable
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool

ASKED = [{"role": "user", "content": [{"type": "text", "text": "write it"}]}]
TOOLS = [{"name": "write", "description": "d", "input_schema": {"type": "object"}}]
BODY = 'line "one", \\ back\n' * 200 + "ünïcödé ✓ 中文 🙂"


def provider(url: str) -> Provider:
    return Provider(Connector(Endpoints("k", url)), "claude-sonnet-5", 4096, 2)


async def test_a_long_tool_input_in_small_pieces_arrives_whole(fake: FakeAnthropic) -> None:
    def answer(call: Call) -> Reply:
        return Reply([text("first"), text("second"), tool("write", path="é.md", body=BODY)],
                     piece=7)  # fmt: skip

    fake.responder = answer
    heard: list[str] = []
    llm = provider(fake.url)
    reply = await llm.complete("s", TOOLS, ASKED, on_text=heard.append)
    await llm.close()
    assert not fake.violations
    assert reply.tool_calls[0]["input"] == {"path": "é.md", "body": BODY}
    assert "".join(heard) == "first\n\nsecond"
    assert reply.stop_reason == "tool_use"
    kinds = [b["type"] for b in reply.content]
    assert kinds[0] == "thinking" and reply.content[0]["signature"]  # kept verbatim
    assert reply.usage.output_tokens > 0 and reply.usage.input_tokens > 0


def events(*raw: dict[str, Any]) -> list[Any]:
    """Events as the SDK hands them out of `messages.create(stream=True)`."""
    from anthropic._models import construct_type

    return [construct_type(type_=RawMessageStreamEvent, value=e) for e in raw]


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 100},
    },
}  # fmt: skip


def read(*raw: dict[str, Any]) -> Reading:
    reading = Reading()
    for event in events(START, *raw):
        reading.take(event)
    reading.finish()
    return reading


def test_a_tool_input_cut_short_stays_the_text_it_is() -> None:
    """A stream cut at max_tokens inside a tool call: no half-parsed input is run; the
    loop answers the call with an error text."""
    reading = read(
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"path": "a.md", "bo'}},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
         "usage": {"output_tokens": 4096}},
    )  # fmt: skip
    assert reading.blocks[0]["input"] == '{"path": "a.md", "bo'
    assert reading.stop_reason == "max_tokens"


def test_citations_and_usage_totals() -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0,
                "document_title": None, "start_char_index": 0, "end_char_index": 1}  # fmt: skip
    reading = read(
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": "", "citations": None}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "citations_delta", "citation": citation}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "unknown_delta"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 9, "input_tokens": 130, "cache_read_input_tokens": None}},
        {"type": "message_stop"},
    )  # fmt: skip
    cited = {k: v for k, v in citation.items() if v is not None}
    assert reading.blocks == [{"type": "text", "text": "A", "citations": [cited]}]
    # totals replace; a count the delta leaves out keeps message_start's
    assert reading.usage["output_tokens"] == 9 and reading.usage["input_tokens"] == 130
    assert reading.usage["cache_read_input_tokens"] == 100


def test_a_compatible_servers_sparse_events_still_make_a_message() -> None:
    """A server that counts no usage, and a block type nobody knows (kept out later by
    the provider, named in its log)."""
    reading = Reading()
    for event in events(
        {"type": "message_start", "message": {"id": "m", "type": "message", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "mystery", "x": 1}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
    ):
        reading.take(event)
    assert reading.usage == {} and reading.stop_reason == "end_turn"
    assert reading.blocks == [{"type": "mystery", "x": 1}]


def test_a_piece_of_a_block_never_opened_is_a_broken_stream() -> None:
    with pytest.raises(ModelUnavailable, match="block 1"):
        read({"type": "content_block_delta", "index": 1,
              "delta": {"type": "text_delta", "text": "A"}})  # fmt: skip


async def test_the_default_client_streams_over_aiohttp(fake: FakeAnthropic) -> None:
    """The SDK's aiohttp transport (agents/model/providers/__init__.py `_anthropic`):
    about a third less CPU per streamed event than httpx's default (bench_cpu --part call)."""
    from anthropic import DefaultAioHttpClient

    from agents.model.providers import _anthropic

    client = _anthropic(Endpoints("k", fake.url))
    assert isinstance(client._client, DefaultAioHttpClient)
    async with await client.messages.create(
        model="claude-sonnet-5", max_tokens=64, messages=ASKED, stream=True
    ) as events:
        kinds = [event.type async for event in events]
    await client.close()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
