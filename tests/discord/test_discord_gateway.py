"""Discord intake and connection: who is ignored, duplicates, dropped gateway sockets,
health in `switchboard status`, a refused token, and `switchboard run` as a process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.app import App
from bot.ledger.report import full_status
from bot.store.core import Store
from config.settings import Settings
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually, make_settings
from tests.kits.discord_kit import (
    MENTION,
    channel_of,
    discord_app,
    discord_settings,
)
from tests.kits.proc import Switchboard

SAID_ANN = "[Ann (900000000000001001) via discord]"  # unlisted: handle plus id
SAID_BOB = "[Bob (900000000000001002) via discord]"


def echo(call: Call) -> list[dict]:
    return [text(f"got: {call.last_text.split(']: ', 1)[-1]}")]


def answered(discord: FakeDiscord, words: str) -> int:
    return sum(p.content == f"**Coordinator:** got: {words}" for p in discord.posts)


async def test_other_bots_disallowed_people_and_channels_and_our_own_posts_are_ignored(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(
        tmp_path,
        fake,
        discord_fake,
        DISCORD_ALLOWED_USERS=f"{dp.ANN},{dp.BOB}",
        DISCORD_ALLOWED_CHANNELS=str(dp.GENERAL),
    )
    async with discord_app(settings) as app:
        mid = discord_fake.say(f"{MENTION} first")
        await discord_fake.until(lambda posts: answered(discord_fake, "first") == 1)
        discord_fake.say(f"{MENTION} I am a bot", author=dp.ROBOT)
        discord_fake.say("a bot in our thread", author=dp.ROBOT, channel=mid)
        discord_fake.say(f"{MENTION} wrong channel", channel=dp.RANDOM)
        discord_fake.say("an echo of ourselves", author=dp.BOT_ID, channel=mid)
        discord_fake.say("not allowed in DMs", channel=discord_fake.open_dm())
        discord_fake.say(f"{MENTION} last", author=dp.BOB)
        await discord_fake.until(lambda posts: answered(discord_fake, "last") == 1)
        assert len(app.store.pending_inbound()) == 0
    seen = [c.last_text for c in fake.calls]
    assert seen == [f"{SAID_ANN}: first", f"{SAID_BOB}: last"]
    reasons = [e["data"]["reason"] for e in events(settings.data_dir, "message.refused")]
    assert reasons == [
        "bot message",
        "bot message",
        "channel not in DISCORD_ALLOWED_CHANNELS",
        "channel not in DISCORD_ALLOWED_CHANNELS",
    ]


async def test_a_person_not_in_allowed_users_is_refused(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake, DISCORD_ALLOWED_USERS=str(dp.ANN))
    async with discord_app(settings):
        discord_fake.say(f"{MENTION} let me in", author=dp.BOB)
        discord_fake.say(f"{MENTION} hello", author=dp.ANN)
        await discord_fake.until(lambda posts: answered(discord_fake, "hello") == 1)
    assert len(fake.calls) == 1
    refused = events(settings.data_dir, "message.refused")
    assert [(e["data"]["reason"], e["data"]["sender"]) for e in refused] == [
        ("user not in DISCORD_ALLOWED_USERS", str(dp.BOB))
    ]


async def test_the_same_message_delivered_twice_is_answered_once(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = discord_fake.say(f"{MENTION} once please")
        discord_fake.resend(mid)
        discord_fake.say(f"{MENTION} after")
        # two conversations, served concurrently: either may be answered first
        await discord_fake.until(
            lambda posts: (
                answered(discord_fake, "after") == 1 and answered(discord_fake, "once please") >= 1
            )
        )
    assert answered(discord_fake, "once please") == 1
    assert len(fake.calls) == 2
    assert [e["data"]["id"] for e in events(settings.data_dir, "message.duplicate")] == [mid]


async def test_empty_mention_gets_a_clear_answer_and_reaches_no_model(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        mid = discord_fake.say(MENTION)
        await discord_fake.until(lambda posts: bool(posts))
    notice = discord_fake.posts[0]
    assert notice.channel_id == str(dp.GENERAL) and notice.reference == mid
    assert notice.content.startswith("**Switchboard:** You mentioned me without a message")
    assert fake.calls == []


async def test_a_dropped_gateway_resumes_and_missed_messages_are_answered(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings) as app:
        mid = discord_fake.say(f"{MENTION} before the drop")
        await discord_fake.until(lambda posts: answered(discord_fake, "before the drop") == 1)

        discord_fake.drop(hold=True)  # the next RESUME waits: these land in the gap
        discord_fake.say("said while the bot was away", channel=mid)
        discord_fake.say(f"{MENTION} also while away")
        await eventually(lambda: "discord  reconnecting" in full_status(app.store))
        discord_fake.release()
        await discord_fake.until(lambda posts: answered(discord_fake, "also while away") == 1)
        await discord_fake.until(
            lambda posts: answered(discord_fake, "said while the bot was away") == 1
        )

        discord_fake.drop()  # a plain drop: the next message still gets through
        discord_fake.say(f"{MENTION} after the second drop")
        await discord_fake.until(lambda posts: answered(discord_fake, "after the second drop") == 1)
        await asyncio.wait_for(channel_of(app).client.connected.wait(), 10)
        status = full_status(app.store)
    assert discord_fake.gateway.identifies == 1 and discord_fake.gateway.resumes == 2
    assert answered(discord_fake, "before the drop") == 1
    assert "discord  connected  as switchboard (session resumed)" in status


async def caught_up_and_answered(discord: FakeDiscord, settings: Settings, words: str) -> str:
    """Once the new session has caught up: a mention, answered; its id."""
    await eventually(lambda: len(events(settings.data_dir, "channel.caught_up")) == 1, 30)
    mid = discord.say(f"{MENTION} {words}")
    await discord.until(lambda posts: answered(discord, words) == 1)
    return mid


async def test_what_was_said_while_the_bot_was_down_is_read_back_and_answered(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    # A new gateway session (after a restart) is not replayed what it missed.
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = await caught_up_and_answered(discord_fake, settings, "before the restart")
    discord_fake.say("in the thread while down", channel=mid)
    discord_fake.say(f"{MENTION} mentioned while down")
    discord_fake.say("chatter for the people in the channel")
    async with discord_app(settings):
        # live before the catch-up (which waits for Discord's guilds, ~2 s): it must not
        # hide the gap behind it
        discord_fake.say(f"{MENTION} live after the restart")
        await discord_fake.until(lambda _: answered(discord_fake, "mentioned while down") == 1, 30)
        await discord_fake.until(lambda _: answered(discord_fake, "in the thread while down") == 1)
    assert answered(discord_fake, "before the restart") == 1
    assert answered(discord_fake, "live after the restart") == 1
    assert len(fake.calls) == 4  # the chatter reached no model
    assert discord_fake.gateway.identifies == 2


async def test_a_session_that_cannot_resume_reads_back_the_gap(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = await caught_up_and_answered(discord_fake, settings, "before the gap")
        discord_fake.drop(hold=True)
        discord_fake.expire_session()  # RESUME is refused: discord.py identifies anew
        discord_fake.say("in the thread during the gap", channel=mid)
        discord_fake.release()
        await discord_fake.until(
            lambda _: answered(discord_fake, "in the thread during the gap") == 1, 30
        )
    assert discord_fake.gateway.identifies == 2 and len(fake.calls) == 2
    assert [e["data"]["messages"] for e in events(settings.data_dir, "channel.caught_up")] == [
        0,
        1,  # hers: our own answer came live and moved the thread's mark past it
    ]


async def test_a_gap_longer_than_discords_resume_buffer_is_read_back(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    # Discord keeps a session's events for RESUME in a bounded buffer: a gap past it
    # gets INVALID_SESSION, and the bot reads the gap back from history instead
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    discord_fake.gateway.keep = 2
    async with discord_app(settings):
        await caught_up_and_answered(discord_fake, settings, "before the gap")
        discord_fake.drop(hold=True)
        for n in range(5):
            discord_fake.say(f"{MENTION} during the gap {n}")
        discord_fake.release()
        for n in range(5):
            await discord_fake.until(
                lambda _, n=n: answered(discord_fake, f"during the gap {n}"), 30
            )
    assert discord_fake.gateway.identifies == 2 and discord_fake.gateway.resumes == 0
    assert all(answered(discord_fake, f"during the gap {n}") == 1 for n in range(5))
    assert len(fake.calls) == 6


async def test_status_shows_discord_health_and_a_refused_token_fails_clearly(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings) as app:
        assert "discord  connected  as switchboard (gateway session)" in full_status(app.store)
    assert "discord  stopped" in render_status_of(settings.db_path)

    env = {**discord_fake.env(), "DISCORD_BOT_TOKEN": "not-the-token"}
    bad = make_settings(tmp_path / "bad", fake, **env)
    app = App(bad, ["discord"])
    await app.start()
    try:
        channel = channel_of(app)
        await eventually(lambda: any(h[1] == "failed" for h in app.store.health()))
        assert not channel.client.logged_in.is_set()
        status = full_status(app.store)
    finally:
        await app.stop()
    assert "discord  failed  DISCORD_BOT_TOKEN was refused by Discord" in status


def render_status_of(db_path: Path) -> str:
    store = Store(db_path, readonly=True)
    try:
        return full_status(store)
    finally:
        store.close()


def test_switchboard_run_serves_discord_and_status_shows_it(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    env = {**fake.env(), **discord_fake.env()}
    data = ["--data-dir", str(tmp_path / "data")]
    run = Switchboard([*data, "run"], env, tmp_path)
    try:
        discord_fake.gateway.wait_identified(15)
        dm = discord_fake.open_dm()
        discord_fake.say("hello from a DM", channel=dm)
        discord_fake.wait_for(lambda posts: answered(discord_fake, "hello from a DM") == 1, 15)
        status = Switchboard([*data, "status"], env, tmp_path)
        code, lines = status.finish()
    finally:
        run.proc.terminate()
        stopped = run.proc.wait(15)
    assert code == 0 and stopped == 0
    assert any(line.startswith("discord  connected") for line in lines), lines


async def test_heartbeats_acked_at_once_measure_their_own_latency(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """A gateway that acks at once (loopback, a gateway proxy): each ack is measured from
    its own beat, not the one before (discord.py's "Can't keep up, websocket is 41.3s
    behind" at every beat; channels/discord/client.py `stamp_heartbeats`)."""
    discord_fake.heartbeat_ms = 1_000
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings) as app:
        client = channel_of(app).client
        await eventually(lambda: discord_fake.gateway.heartbeats >= 4, timeout=30)
        await eventually(lambda: client.latency != float("inf"))
        latency = client.latency
    # measured from the beat before, it is never under one interval
    assert latency < 1.0, latency
    behind = [r.getMessage() for r in caplog.records if "Can't keep up" in r.getMessage()]
    assert not behind
