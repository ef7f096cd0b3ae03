"""Discord catch-up by watermark: whatever moment sessions die at, no gap goes unread.

Each session below is ended while its catch-up stands at a different point (the fake
holds the history requests); `app.stop()` cancels the catch-up as a kill would (the
marks are only written as the reads complete), and people keep posting in every gap.
Every message addressed to the bot is answered exactly once in the end.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually
from tests.kits.discord_kit import (
    MENTION,
    discord_app,
    discord_settings,
)


def echo(call: Call) -> list[dict]:
    return [text(f"got: {call.last_text.split(']: ', 1)[-1]}")]


def answered(discord: FakeDiscord, words: str) -> int:
    """Replies that echo `words` (messages of one conversation that arrive together are
    answered in one turn, so one reply may echo several)."""
    return sum(f"]: {words}" in p.content or f"got: {words}" in p.content for p in discord.posts)


def caught_up(data_dir: Path) -> list[dict]:
    return [e["data"] for e in events(data_dir, "channel.caught_up")]


async def test_sessions_dying_before_during_and_after_catch_up_leave_no_gap_unread(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    said: list[str] = []

    def say(words: str, channel: str | int = dp.GENERAL) -> None:
        mention = f"{MENTION} " if channel == dp.GENERAL else ""
        discord_fake.say(mention + words, channel=channel)
        said.append(words)

    async with discord_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1, 30)
        mid = discord_fake.say(f"{MENTION} first")
        said.append("first")
        await discord_fake.until(lambda _: answered(discord_fake, "first") == 1)

    say("gap one, in the thread", mid)
    say("gap one, a mention")
    # session 2 dies before its catch-up has read anything, after live messages came
    # in both places (the old rule then took them as the new starting point)
    discord_fake.hold_history()
    async with discord_app(settings):
        say("live in session two")
        say("live in the thread in session two", mid)
        await discord_fake.until(lambda _: answered(discord_fake, "live in session two") == 1)
        await discord_fake.until(
            lambda _: answered(discord_fake, "live in the thread in session two") == 1
        )
        await eventually(lambda: discord_fake.history_waiting == 1, 30)
    discord_fake.release_history()

    say("gap two, in the thread", mid)
    # session 3 dies midway: one history page answered, the next held
    discord_fake.hold_history(after=1)
    async with discord_app(settings):
        await eventually(lambda: discord_fake.history_waiting == 1, 30)
        say("live in session three", mid)
        await discord_fake.until(lambda _: answered(discord_fake, "live in session three") == 1, 20)
    discord_fake.release_history()

    say("gap three, in the thread", mid)
    say("gap three, a mention")
    async with discord_app(settings):  # session 4 catches up completely
        await discord_fake.until(
            lambda _: all(answered(discord_fake, words) >= 1 for words in said), 30
        )
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2, 30)

    say("gap four, after a completed catch-up", mid)
    async with discord_app(settings):  # session 5
        await discord_fake.until(
            lambda _: answered(discord_fake, "gap four, after a completed catch-up") == 1, 30
        )
        await eventually(lambda: len(caught_up(settings.data_dir)) == 3, 30)
    assert {words: answered(discord_fake, words) for words in said} == dict.fromkeys(said, 1)
    # only the sessions that finished their catch-up say so
    assert len(caught_up(settings.data_dir)) == 3


async def test_a_message_deleted_in_the_gap_and_a_channel_the_bot_lost_are_skipped(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1, 30)
        mid = discord_fake.say(f"{MENTION} in general")
        discord_fake.say(f"{MENTION} in random", channel=dp.RANDOM)
        await discord_fake.until(lambda _: answered(discord_fake, "in random") == 1)
        await discord_fake.until(lambda _: answered(discord_fake, "in general") == 1)
    gone = discord_fake.say("said, then deleted", channel=mid)
    discord_fake.delete(gone)
    discord_fake.say("still there", channel=mid)
    discord_fake.say(f"{MENTION} lost to us", channel=dp.RANDOM)
    discord_fake.forbid(dp.RANDOM)
    async with discord_app(settings) as app:
        await discord_fake.until(lambda _: answered(discord_fake, "still there") == 1, 30)
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2, 30)
        marks = app.store.kv_prefixed("discord.watermark.")
    assert answered(discord_fake, "said, then deleted") == 0
    assert answered(discord_fake, "lost to us") == 0
    assert caught_up(settings.data_dir)[-1]["forgotten"] == 1
    assert str(dp.RANDOM) not in marks and mid in marks


async def test_a_corrupt_watermark_is_quarantined_and_its_place_read_from_a_bounded_window(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = echo
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1, 30)
        discord_fake.say(f"{MENTION} before")
        await discord_fake.until(lambda _: answered(discord_fake, "before") == 1)
    db = sqlite3.connect(settings.db_path)
    db.execute(
        "UPDATE kv SET value = '{broken' WHERE key = ?", (f"discord.watermark.{dp.GENERAL}",)
    )
    assert db.total_changes == 1
    db.commit()
    db.close()
    discord_fake.say(f"{MENTION} while the mark was broken")
    async with discord_app(settings):
        await discord_fake.until(
            lambda _: answered(discord_fake, "while the mark was broken") == 1, 30
        )
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2, 30)
    assert answered(discord_fake, "before") == 1  # read again from the window, not answered
    problems = [e["data"]["problem"] for e in events(settings.data_dir, "store.corrupt")]
    assert len(problems) == 1 and problems[0].startswith(f"kv row discord.watermark.{dp.GENERAL}")
