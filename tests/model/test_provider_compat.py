"""An Anthropic-compatible server at ANTHROPIC_BASE_URL: what it refuses is learnt from
its first 400 and left out from then on; a server that does not stream is said plainly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agents.model.llm import ModelError, Provider
from agents.model.providers import Connector, Endpoints
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text

ASKED = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
TOOLS = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]


def provider(url: str, model: str = "llama3:8b") -> Provider:
    return Provider(Connector(Endpoints("k", url)), model, 1024, 2)


async def test_cache_breakpoints_refused_once_are_left_out_after(fake: FakeAnthropic) -> None:
    def no_cache(call: Call) -> Reply:
        if "cache_control" in json.dumps(call.body):
            return Reply([], status=400, error="cache_control: Extra inputs are not permitted")
        return Reply([text("fine")])

    fake.responder = no_cache
    llm = provider(fake.url)
    assert (await llm.complete("s", TOOLS, ASKED)).text == "fine"
    assert (await llm.complete("s", TOOLS, ASKED)).text == "fine"
    await llm.close()
    assert len(fake.calls) == 3  # refused once, then never sent again
    assert "cache_control" not in json.dumps(fake.calls[2].body)


async def test_a_400_about_something_else_is_not_learnt(fake: FakeAnthropic) -> None:
    fake.responder = lambda call: Reply([], status=400, error="messages: too long")
    llm = provider(fake.url)
    with pytest.raises(ModelError, match="too long"):
        await llm.complete("s", TOOLS, ASKED)
    await llm.close()
    assert len(fake.calls) == 1


@pytest.fixture
async def json_server() -> AsyncIterator[str]:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"type": "message", "content": []})

    app = web.Application()
    app.router.add_post("/v1/messages", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield str(server.make_url("")).rstrip("/")
    await server.close()


async def test_a_server_that_answers_json_to_a_stream_is_a_clear_error(json_server: str) -> None:
    llm = provider(json_server)
    with pytest.raises(ModelError, match="did not answer a streamed request with a stream"):
        await llm.complete("s", [], ASKED)
    await llm.close()
