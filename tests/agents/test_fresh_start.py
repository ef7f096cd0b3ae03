"""`new` or `/new` alone starts a fresh conversation in that place: the transcript is
archived (memory_search finds it) and forgotten, memory stays, a parked worker of the
conversation keeps its origin. On the terminal, a Slack DM and a Discord DM."""

from __future__ import annotations

import json
from pathlib import Path

from bot.core.messages import COORDINATOR
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.discord_kit import (
    discord_app,
    discord_settings,
)
from tests.kits.script import TeamScript
from tests.kits.slack_kit import heard, slack_app, slack_settings


def archives(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "agents" / "coordinator" / "archive").glob("*.jsonl"))


async def test_new_on_the_terminal_archives_the_talk_and_starts_afresh(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = heard
    channel = Recorder()
    async with running_app(make_settings(tmp_path, fake), [channel]) as app:
        app.human.accept(inbound("my favourite colour is teal"))
        await channel.wait_count(1)
        app.human.accept(inbound("/new"))
        await channel.wait_text("Started a new conversation")
        app.human.accept(inbound("what did I say?"))
        await channel.wait_count(3)
        messages, target = app.store.agents.load_conversation(COORDINATOR, "terminal")
    assert "teal" not in json.dumps(messages) and target == "terminal"
    assert "teal" not in fake.calls[-1].all_text  # the model starts afresh
    assert len(fake.calls) == 2  # `new` itself costs no model call
    [archive] = archives(tmp_path)
    assert "teal" in archive.read_text()
    notice = channel.sent[1]
    assert notice.kind == "notice" and "archived" in notice.text
    assert events(tmp_path, "conversation.fresh")[0]["data"]["messages"] >= 2


async def test_new_while_a_worker_is_parked_keeps_its_origin_and_says_so(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    script = TeamScript()
    fake.responder = script
    channel = Recorder()
    async with running_app(make_settings(tmp_path, fake), [channel]) as app:
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        app.human.accept(inbound("new"))
        await channel.wait_text("Started a new conversation")
        notice = channel.texts()[-1]
        assert "Worker Alice still waits" in notice and "@Alice" in notice
        app.human.accept(inbound("@Alice consumer"))
        await channel.wait_text("Report based on: consumer")
        assert app.store.agents.workers(("parked",)) == []
    assert script.answers_seen == ["consumer"]


async def test_the_archive_is_found_by_memory_search(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = heard
    channel = Recorder()
    env = {"SWITCHBOARD_MEMORY_INLINE_BYTES": "0", "SWITCHBOARD_MEMORY_RESCAN_SECONDS": "0"}
    async with running_app(make_settings(tmp_path, fake, **env), [channel]) as app:
        app.human.accept(inbound("the launch code word is pelican"))
        await channel.wait_count(1)
        app.human.accept(inbound("new"))
        await channel.wait_text("Started a new conversation")
        found = app.memory.agent(COORDINATOR).search("pelican")
    assert "archived conversation" in found and "pelican" in found


async def test_new_in_a_slack_dm(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack) -> None:
    fake.responder = heard
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        slack.post("our budget for this is 40k", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post("new", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 2)
        slack.post("what is the budget?", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 3)
    assert "Started a new conversation" in slack.posts[1]["text"]
    assert slack.posts[1]["channel"] == "D1"
    assert "40k" not in fake.calls[-1].all_text
    assert archives(settings.data_dir)


async def test_new_in_a_discord_dm(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    dm = discord_fake.open_dm(dp.BOB)
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        discord_fake.say("the release is on friday", author=dp.BOB, channel=dm)
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(dm)) == 1)
        discord_fake.say("/new", author=dp.BOB, channel=dm)
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(dm)) == 2)
        discord_fake.say("when is the release?", author=dp.BOB, channel=dm)
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(dm)) == 3)
    assert "Started a new conversation" in discord_fake.in_channel(dm)[1].content
    assert "friday" not in fake.calls[-1].all_text
    assert archives(settings.data_dir)
