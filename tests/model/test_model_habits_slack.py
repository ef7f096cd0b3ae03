"""The model contract end to end through Slack and the terminal (issue 16, items 1-4):
the real slack-bolt/slack-sdk against the fake Slack, and the terminal channel as
`switchboard chat` runs it, with the fake Anthropic API playing a real model's habits
and its strict validator checking every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.triggers import build_spec
from config.settings import Settings
from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events, eventually
from tests.kits.slack_kit import (
    MENTION,
    post_with,
    posted,
    slack_app,
    slack_settings,
    texts,
)
from tests.kits.terminal_kit import chat


async def test_the_answer_written_beside_remember_reaches_the_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.after_tool_result(call):
            return habit.empty()
        return [text("Got it, tea it is."), tool("remember", content="Ann drinks tea")]

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        ts = slack.post(f"{MENTION} I drink tea, not coffee", channel="C1")
        await slack.until(posted("tea it is"))
        await eventually(lambda: len(fake.calls) == 2 and not app.coordinator.sessions)
    assert texts(slack) == ["*coordinator:* Got it, tea it is."]
    assert post_with(slack, "tea it is")["thread_ts"] == ts


async def test_at_alice_is_answered_and_alice_later_publishes_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def alice(call: Call) -> Reply | list[dict[str, Any]]:
        if "how far are you" in call.last_text:
            return [text("About halfway.")]
        if habit.ANSWERED_MARK in call.last_text:
            return [tool("publish", result="GPUs are pricey.")]
        return Reply([tool("remember", content="working")], delay=0.1)

    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if call.agent != "coordinator":
            return alice(call)
        if "published its result" in call.last_text:
            return [text("Alice finished: GPUs are pricey.")]
        if "research" in call.last_text and not call.tool_results():
            return [tool("spawn_worker", name="Alice", task="Research GPUs")]
        return habit.empty()

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        first = slack.post(f"{MENTION} research GPUs", channel="C1")
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        asked = slack.post(f"{MENTION} @Alice how far are you?", channel="C2")
        await slack.until(posted("Alice finished"))
    answer = post_with(slack, "About halfway")
    assert answer["text"] == "*Alice:* About halfway."
    assert (answer["channel"], answer["thread_ts"]) == ("C2", asked)
    assert texts(slack).count("*coordinator:* Alice finished: GPUs are pricey.") == 1
    assert post_with(slack, "Alice finished")["thread_ts"] == first
    assert len(events(tmp_path, "worker.completed")) == 1


async def test_an_answer_cut_at_max_tokens_arrives_as_one_post(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    def respond(call: Call) -> Reply:
        if habit.asked_to_continue(call):
            return Reply([text("the rest of the story.")])
        return habit.cut_text("Once upon a time, and ")

    fake.responder = respond
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        slack.post(f"{MENTION} tell me a story", channel="C1")
        await slack.until(posted("rest of the story"))
        await eventually(lambda: not app.coordinator.sessions)
    assert texts(slack) == ["*coordinator:* Once upon a time, and the rest of the story."]


async def test_a_quiet_heartbeat_posts_nothing(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    # the model has nothing to say to the heartbeat (nor to the message that woke it)
    fake.responder = lambda call: habit.empty()
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS="0.1")
    async with slack_app(settings) as (app, _):
        config = {"interval_seconds": 0.2, "watch": ["messages"]}
        spec = build_spec("heartbeat", config, "Check in.", min_interval=0.1)
        app.triggers.create(spec, "coordinator", None, "slack:C9")
        slack.post(f"{MENTION} fyi, the deploy is done", channel="C1")
        await eventually(lambda: any("[Scheduled task]" in c.last_text for c in fake.calls))
        await eventually(lambda: not app.coordinator.sessions)
    assert slack.posts == []  # no HEARTBEAT_OK, no empty post, anywhere


async def test_the_terminal_shows_each_answer_once_and_whole(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def respond(call: Call) -> Reply | list[dict[str, Any]]:
        if habit.after_tool_result(call):
            return habit.empty()
        if habit.asked_to_continue(call):
            return [text("and that is all.")]
        if "tea" in call.last_text:
            return [text("Noted: tea."), tool("remember", content="tea")]
        return habit.cut_text("A long answer, ")

    fake.responder = respond
    printed, _ = await chat(settings, "I drink tea\ntell me everything\n")
    lines = printed.splitlines()
    assert lines.count("[coordinator] Noted: tea.") == 1
    assert lines.count("[coordinator] A long answer, and that is all.") == 1
    assert not any(line.strip() == "[coordinator]" for line in lines)  # no empty post
