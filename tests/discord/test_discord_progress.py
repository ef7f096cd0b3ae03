"""Discord live progress: the typing indicator shows at once and is renewed while the
agent works; reactions when asked for. The real discord.py against the fake Discord."""

from __future__ import annotations

from pathlib import Path

from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import FakeAnthropic, Reply, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually
from tests.kits.discord_kit import (
    MENTION,
    discord_app,
    discord_settings,
)


async def test_typing_shows_at_once_and_is_renewed_while_the_answer_takes(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: Reply([text("after a long think")], delay=9)
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_STREAMING="on")
    async with discord_app(settings):
        discord_fake.say(f"{MENTION} think hard")
        await discord_fake.until(lambda _: len(discord_fake.typing) == 1, timeout=1.0)
        assert not discord_fake.posts  # typing before any answer
        await discord_fake.until(lambda _: len(discord_fake.typing) == 2, timeout=12)
        await eventually(lambda: bool(events(settings.data_dir, "message.sent")), 15)
    first, second = discord_fake.typing
    assert first[0] == str(dp.GENERAL) and 7 <= second[1] - first[1] <= 10


async def test_a_busy_channel_gets_one_typing_for_all_its_conversations_and_a_dm_at_once(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    """The indicator is the channel's: three mentions at work there need one request
    (three would queue behind Discord's 5 per 5 s); an answer posted in a DM ends it
    there, so the next question in that DM shows it again at once."""
    fake.responder = lambda call: Reply([text("done")], delay=2)
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_STREAMING="on")
    async with discord_app(settings):
        for n in range(3):
            discord_fake.say(f"{MENTION} topic {n}")
        await eventually(lambda: len(events(settings.data_dir, "message.sent")) == 3, 15)
        in_general = [t for t in discord_fake.typing if t[0] == str(dp.GENERAL)]
        dm = discord_fake.open_dm()
        discord_fake.say("first question", channel=dm)
        await eventually(lambda: len(events(settings.data_dir, "message.sent")) == 4, 15)
        discord_fake.say("second question", channel=dm)
        await eventually(lambda: len(events(settings.data_dir, "message.sent")) == 5, 15)
    assert len(in_general) == 1
    assert len([t for t in discord_fake.typing if t[0] == dm]) == 2
    assert not discord_fake.limited  # nothing sent past a bucket


ANSWER = (
    "The deploy went out at **noon**. All checks are green, the canary held for an hour, "
    "and nothing needs doing today."
)
FINAL = f"**Coordinator:** {ANSWER}"
RATE_LIMITED = (
    429,
    {"message": "You are being rate limited.", "retry_after": 0.3, "global": False, "code": 0},
    {"Retry-After": "1", "X-RateLimit-Scope": "user", "Via": "1.1 google"},
)


async def test_a_dm_answer_is_posted_at_its_first_words_and_edited_in_place(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: Reply([text(ANSWER)], pace=0.15, piece=10)
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_STREAMING="on")
    async with discord_app(settings):
        dm = discord_fake.open_dm()
        discord_fake.say("how did the deploy go?", channel=dm)
        await discord_fake.until(lambda _: bool(discord_fake.in_channel(dm)))
        [early] = discord_fake.in_channel(dm)
        assert early.content.startswith("**Coordinator:** The") and ANSWER not in early.content
        discord_fake.edit_failures.append(RATE_LIMITED)  # an edit Discord refuses once
        await eventually(lambda: bool(events(settings.data_dir, "message.sent")), 15)
    [post] = discord_fake.in_channel(dm)  # one message, edited: no second post
    assert discord_fake.messages[post.id]["content"] == FINAL
    assert len(discord_fake.edits) >= 2  # edited while written, then to the row's text


async def test_an_answer_whose_thread_was_archived_while_written_is_posted_anew_in_it(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    """Discord refuses an edit in an archived thread (400, code 50083); a new message
    reopens it. The finished answer must not be lost to the refused edit."""
    replies = iter([Reply([text("first")]), Reply([text(ANSWER)], pace=0.15, piece=10)])
    fake.responder = lambda call: next(replies)
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_STREAMING="on")
    async with discord_app(settings):
        mid = discord_fake.say(f"{MENTION} how did the deploy go?")
        await discord_fake.until(lambda _: bool(discord_fake.in_channel(mid)))
        discord_fake.say("and the canary?", channel=mid)  # in the now open thread: live
        await discord_fake.until(lambda _: len(discord_fake.in_channel(mid)) == 2)
        discord_fake.archive(mid)  # quiet too long: its edits are refused from now on
        await eventually(lambda: len(events(settings.data_dir, "message.sent")) == 2, 15)
    live, anew = discord_fake.in_channel(mid)[1:]
    assert ANSWER not in discord_fake.messages[live.id]["content"]  # left as it was
    assert anew.content == FINAL
    meta = discord_fake.channels[mid]["thread_metadata"]
    assert discord_fake.archived == [mid] and not meta["archived"]  # the answer reopened it
    assert not events(settings.data_dir, "message.failed")
