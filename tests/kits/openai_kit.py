"""The fake OpenAI-compatible server (`openai_fake`, any request the real API would
refuse fails the test) and a Provider pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.model.llm import Provider
from agents.model.providers import Connector, Endpoints
from tests.fakes.openai_api import FakeOpenAI

MODEL = "openai:gpt-test"


@pytest.fixture(name="openai_fake")
def openai_fake_fixture() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
    refused = [reasons for _, reasons in server.violations]
    assert not refused, f"requests the real Chat Completions API refuses: {refused}"


def openai_provider(server: FakeOpenAI, model: str = MODEL, max_tokens: int = 1024) -> Provider:
    endpoints = Endpoints(openai_key="sk-test", openai_base_url=server.url)
    return Provider(Connector(endpoints), model, max_tokens, 4)
