"""End to end on an `openai:` model: a person messages the bot through the fake Slack,
and a worker is spawned and relays its result; every model call goes to the fake
Chat Completions server (tests/fakes/openai_api.py), none to Anthropic."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.openai_api import Answer, ChatCall, FakeOpenAI
from tests.fakes.slack_api import FakeSlack
from tests.kits.openai_kit import MODEL
from tests.kits.slack_kit import MENTION, posted, slack_app, slack_settings, texts


def team(call: ChatCall) -> Answer:
    """A coordinator that spawns Alice on "research"; Alice publishes at once."""
    system = call.messages[0]["content"]
    last = call.messages[-1]
    if "Your name is Alice" in system:
        if last["role"] == "tool":
            return Answer("Published.")
        return Answer(calls=[("publish", json.dumps({"result": "GPUs cost 2 dollars an hour"}))])
    if "published its result" in call.last_text:
        return Answer("Alice finished: " + call.last_text.split("published its result]: ", 1)[1])
    if last["role"] == "tool":
        return Answer("Alice is on it.")
    if "research" in call.last_text:
        spawn = json.dumps({"name": "Alice", "task": "Research GPU prices"})
        return Answer("Starting a worker.", calls=[("spawn_worker", spawn)])
    return Answer(f"heard: {call.last_text[-60:]}")


async def test_messaging_the_bot_and_a_worker_on_an_openai_model(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, openai_fake: FakeOpenAI
) -> None:
    openai_fake.responder = team
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_MODEL=MODEL, **openai_fake.env())
    async with slack_app(settings):
        slack.post(f"{MENTION} hello there", channel="C1")
        await slack.until(posted("heard:"))
        slack.post(f"{MENTION} please research GPU prices", channel="C1")
        await slack.until(posted("Alice finished: GPUs cost 2 dollars an hour"), timeout=20)
    assert any("hello there" in t for t in texts(slack))
    assert fake.calls == []  # nothing went to Anthropic
    assert {c.body["model"] for c in openai_fake.calls} == {"gpt-test"}
    assert any("Alice" in c.messages[0]["content"] for c in openai_fake.calls)
