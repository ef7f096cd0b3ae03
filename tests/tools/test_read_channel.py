"""`read_channel`: what people said in a channel, for a scheduled summary, through the
real slack-sdk against the fake Slack's history (people's messages the bot was never
addressed in included), and the real discord.py against the fake Discord."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.tools.read_channel import since_of
from config.settings import load_settings
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.discord_kit import MENTION as DISCORD_MENTION
from tests.kits.discord_kit import (
    discord_app,
    discord_settings,
)
from tests.kits.slack_kit import (
    MENTION,
    slack_app,
    slack_settings,
    texts,
)

OPS = "COPS"


def summariser(target: str) -> Any:
    """Sets up a delayed summary of `target` when asked; the scheduled task reads the
    channel and quotes it; anything read_channel refuses is said as it is."""

    def responder(call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        results = call.tool_results()
        if results and "read_channel" in call.all_text and "[Scheduled task]" in call.all_text:
            return [text("Yesterday in #ops:\n" + results[0]["content"])]
        if results:
            return [text("scheduled")]
        if "[Scheduled task]" in last:
            return [tool("read_channel", target=target, since="24h")]
        if "summary" in last:
            config = {"delay_seconds": 0.2}
            return [
                tool(
                    "schedule",
                    type="delayed",
                    config=config,
                    action="Summarise #ops",
                    deliver_to=target,
                )
            ]
        return [text("ok")]

    return responder


async def test_a_scheduled_summary_quotes_what_people_said_without_the_bot(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = summariser(f"slack:{OPS}")
    slack.scopes += ",users:read,channels:history"
    slack.users.update({"UANN": {"name": "ann"}, "UBEN": {"name": "ben"}})
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS="0.1")
    async with slack_app(settings):
        slack.post("the db migration finished at 03:10, all green", user="UBEN", channel=OPS)
        slack.post("deploying 4.2 after lunch", user="UANN", channel=OPS)
        slack.post(f"{MENTION} set up the ops summary please", channel="C1")
        await slack.until(lambda s: any("Yesterday in #ops" in t for t in texts(s)), 15)
    summary = next(p for p in slack.posts if "Yesterday in #ops" in p["text"])
    assert summary["channel"] == OPS
    assert "ben: the db migration finished at 03:10, all green" in summary["text"]
    assert "ann: deploying 4.2 after lunch" in summary["text"]
    received = [e["data"]["channel"] for e in events(tmp_path, "message.received")]
    assert received == ["slack"]  # only the mention reached the bot as a message
    assert len(slack.method_calls("users.info")) == 2  # each name looked up once


async def test_read_channel_refusals_are_told_to_the_model(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    asks = iter(
        [
            tool("read_channel", target="slack:C2"),
            tool("read_channel", target="nowhere:1"),
            tool("read_channel", target=f"slack:{OPS}", since="last tuesday"),
            tool("read_channel", target="discord:123"),
            tool("read_channel", target=f"slack:{OPS}", limit=2),
        ]
    )

    def responder(call: Call) -> list[dict[str, Any]]:
        return [next(asks, text("done"))]

    fake.responder = responder
    slack.remove_bot("C2")
    slack.members["C2"] = ["UANN"]  # Ann may read it: Slack's own refusal is what she hears
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        for n in range(1, 6):
            slack.post(f"ops chatter {n}", channel=OPS)
        slack.post(f"{MENTION} read around", channel="C1")
        await slack.until(lambda s: any("done" in t for t in texts(s)))
    results = [c.tool_results()[0]["content"] for c in fake.calls[1:6]]
    assert "not_in_channel" in results[0] and "/invite" in results[0]
    assert "unknown delivery target" in results[1]
    assert "neither an ISO time" in results[2]
    assert "not a channel I can read" in results[3]
    assert "ops chatter 4" in results[4] and "ops chatter 5" in results[4]
    assert "ops chatter 3" not in results[4] and "cut: only the newest 2" in results[4]


def test_since_takes_ages_and_iso_times() -> None:
    now = 1_800_000_000.0
    assert since_of("24h", now) == now - 86400
    assert since_of("2027-01-15T00:00:00Z", now) == datetime(2027, 1, 15, tzinfo=UTC).timestamp()
    assert since_of("2027-01-15T01:00:00+01:00", now) == since_of("2027-01-15T00:00", now)
    assert since_of(None, now) is None


async def test_read_channel_reads_a_discord_channel(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = summariser(f"discord:{dp.RANDOM}")
    settings = discord_settings(
        tmp_path, fake, discord_fake, SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS="0.1"
    )
    async with discord_app(settings):
        discord_fake.say("the cache node restarted twice overnight", channel=dp.RANDOM)
        discord_fake.say(f"{DISCORD_MENTION} set up the summary")
        await discord_fake.until(
            lambda posts: any("Yesterday in #ops" in p.content for p in posts), 15
        )
    summary = next(p for p in discord_fake.posts if "Yesterday in #ops" in p.content)
    assert summary.channel_id == str(dp.RANDOM)
    assert "the cache node restarted twice overnight" in summary.content


def test_the_example_ops_summary_schedule_is_valid(tmp_path: Path) -> None:
    """The commented `[[schedules]]` example for "yesterday in #ops" loads as written."""
    example = (Path(__file__).parents[2] / "config" / "switchboard.toml").read_text()
    block = example.split('# name = "ops-yesterday"', 1)[1].split("\n\n", 1)[0]
    lines = ["[[schedules]]", 'name = "ops-yesterday"']
    lines += [line.removeprefix("# ").split("  #")[0] for line in block.strip().splitlines()]
    config = tmp_path / "switchboard.toml"
    config.write_text("\n".join(lines) + "\n")
    settings = load_settings(config, {"SWITCHBOARD_DATA_DIR": str(tmp_path / "data")})
    (schedule,) = settings.schedules
    assert schedule.cron == "30 8 * * 1-5" and schedule.deliver_to == "slack:C0OPS00000"
    assert "read_channel" in schedule.action


async def test_read_channel_keeps_to_discord_allowed_channels(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text("read: " + call.tool_results()[0]["content"])]
        return [tool("read_channel", target=f"discord:{dp.RANDOM}")]

    fake.responder = responder
    settings = discord_settings(
        tmp_path, fake, discord_fake, DISCORD_ALLOWED_CHANNELS=str(dp.GENERAL)
    )
    async with discord_app(settings):
        discord_fake.say("private chatter", channel=dp.RANDOM)
        discord_fake.say(f"{DISCORD_MENTION} what happened in random?")
        await discord_fake.until(lambda posts: any("read:" in p.content for p in posts))
    answer = next(p.content for p in discord_fake.posts if "read:" in p.content)
    assert "DISCORD_ALLOWED_CHANNELS" in answer and "private chatter" not in answer
