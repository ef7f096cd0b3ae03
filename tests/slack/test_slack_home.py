"""Slack's `/switchboard` slash command (status, new, help; acked with its answer
within Slack's 3 s, over Socket Mode and HTTP) and the App Home tab (views.publish:
what runs, what waits for whom, pending approvals), against the fake Slack."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.slack.home import HELP
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import Envelope, FakeSlack
from tests.fakes.slack_commands import ACK_SECONDS
from tests.kits.script import TeamScript
from tests.kits.slack_kit import (
    MENTION,
    heard,
    http_settings,
    posted,
    slack_app,
    slack_settings,
)


async def acked(slack: FakeSlack, envelope: Envelope) -> str:
    await slack.until(lambda s: envelope.acked_at is not None)
    assert envelope.sent_at is not None and envelope.acked_at is not None
    assert envelope.acked_at - envelope.sent_at < ACK_SECONDS
    response = envelope.response or {}
    return str(response.get("text", "")) if isinstance(response, dict) else str(response)


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_the_slash_command_answers_status_help_and_new(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, mode: str
) -> None:
    fake.responder = heard
    settings = (
        slack_settings(tmp_path, fake, slack) if mode == "socket"
        else http_settings(tmp_path, fake, slack)
    )  # fmt: skip
    async with slack_app(settings):
        status = await acked(slack, slack.slash("status"))
        assert status.startswith("```") and "slack" in status
        assert "/switchboard new" in await acked(slack, slack.slash("help"))
        assert "/switchboard status" in await acked(slack, slack.slash(""))
        slack.post("our budget for this is 40k", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 1)
        answer = await acked(slack, slack.slash("new", channel="D1"))
        assert answer == "Starting a new conversation here."
        await slack.until(posted("Started a new conversation"))
        in_channel = await acked(slack, slack.slash("new", channel="C1"))
        assert "every thread is its own conversation" in in_channel
        slack.post("what is the budget?", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 3)
    assert "40k" not in fake.calls[-1].all_text


async def test_a_user_not_allowed_gets_no_status(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    settings = slack_settings(tmp_path, fake, slack, SLACK_ALLOWED_USERS="UBOB")
    async with slack_app(settings):
        assert "SLACK_ALLOWED_USERS" in await acked(slack, slack.slash("status"))


async def test_the_home_tab_shows_what_runs_and_who_waits(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = TeamScript()
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} please research GPUs", channel="C1")
        await slack.until(posted("Alice asks"))
        slack.open_home("UANN")
        await slack.until(lambda s: "UANN" in s.home_views)
    view = slack.home_views["UANN"]
    text = str(view["blocks"])
    assert view["type"] == "home"
    assert "*What runs* (1)" in text and "*Alice* (parked" in text
    assert "*Waiting for people* (1)" in text and "Data center or consumer GPUs?" in text
    assert "*Pending approvals* (0)" in text and "No tool call waits." in text


async def test_catchup_answers_each_person_with_their_own_conversations_only(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Ann and Bob each talk to the bot in a DM of their own: `/switchboard catchup`
    shows each what was said to them since they last spoke, never the other's."""
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post("ann's secret plan", channel="D1", channel_type="im", user="UANN")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post("bob's private numbers", channel="D2", channel_type="im", user="UBOB")
        await slack.until(lambda s: len(s.posts) == 2)
        calls = len(fake.calls)
        ann = await acked(slack, slack.slash("catchup", user="UANN"))
        bob = await acked(slack, slack.slash("catchup", user="UBOB"))
        assert len(fake.calls) == calls  # answered without a model call
    assert ann.startswith("Since you last spoke to me (")
    assert "coordinator said in <#D1>: heard:" in ann and "secret plan" in ann
    assert "bob" not in ann.lower() and "D2" not in ann
    assert "coordinator said in <#D2>: heard:" in bob and "private numbers" in bob
    assert "secret plan" not in bob and "D1" not in bob
    assert "/switchboard catchup" in HELP
