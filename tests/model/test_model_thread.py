"""The SDK's client work runs in the model thread (agents/model/providers/offloop.py),
through the real SDK against the fake API: the answer, its streamed text and its
errors come back to the caller's loop as before; a cancelled call (a person's stop, a
timeout) is cancelled in the model thread too; closing the provider ends the thread."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from agents.model.llm import ModelError, Provider
from agents.model.providers import Connector, Endpoints
from tests.fakes.anthropic_api import FakeAnthropic, Reply, text
from tests.kits.app_kit import eventually

ASKED = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
TOOLS = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]


def model_threads() -> set[threading.Thread]:
    """(another test's provider left unclosed may have one too)"""
    return {t for t in threading.enumerate() if t.name == "switchboard-model"}


async def test_the_answer_and_its_streamed_text_come_back_to_the_callers_loop(
    fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    fake.responder = lambda call: [text("one"), text("two")]
    before = model_threads()
    llm = Provider(Connector(Endpoints("k", fake.url)), "llama3:8b", 1024, 2)
    heard: list[tuple[str, str]] = []
    with caplog.at_level(logging.INFO, logger="httpx2"):
        reply = await llm.complete(
            "s", TOOLS, ASKED, on_text=lambda t: heard.append((t, threading.current_thread().name))
        )
    assert reply.text == "one\ntwo"
    assert "".join(t for t, _ in heard) == "one\n\ntwo"  # in order, all before the answer
    assert {name for _, name in heard} == {threading.current_thread().name}
    sent = [r for r in caplog.records if "/v1/messages" in r.getMessage()]
    assert sent and {r.threadName for r in sent} == {"switchboard-model"}  # the SDK's work
    await llm.close()
    assert model_threads() == before


async def test_an_error_is_raised_to_the_caller_as_before(fake: FakeAnthropic) -> None:
    fake.responder = lambda call: Reply([], status=400, error="messages: too long")
    llm = Provider(Connector(Endpoints("k", fake.url)), "llama3:8b", 1024, 2)
    with pytest.raises(ModelError, match="too long"):
        await llm.complete("s", TOOLS, ASKED)
    await llm.close()


async def test_a_cancelled_call_is_cancelled_in_the_model_thread(fake: FakeAnthropic) -> None:
    fake.responder = lambda call: Reply([text("late")], delay=30)
    before = model_threads()
    connector = Connector(Endpoints("k", fake.url))
    llm = Provider(connector, "llama3:8b", 1024, 2)
    call = asyncio.create_task(llm.complete("s", TOOLS, ASKED))
    await eventually(lambda: len(fake.calls) == 1)
    started = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 1  # the caller does not wait for the thread

    async def others() -> int:  # the tasks left in the model thread's loop
        return len(asyncio.all_tasks()) - 1

    deadline = time.monotonic() + 5
    while await connector.thread.run(others()):
        assert time.monotonic() < deadline, "the SDK call still runs in the model thread"
        await asyncio.sleep(0.02)
    assert llm.in_flight == 0
    await llm.close()
    assert model_threads() == before
