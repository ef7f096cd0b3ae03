"""Delivering to Discord: 2,000-character parts with whole code blocks, rate limits,
errors mapped to retry or failure, the home target, and thread fallbacks.
"""

from __future__ import annotations

import time
from pathlib import Path

from bot.core.messages import Outbound, Target
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually
from tests.kits.discord_kit import (
    MENTION,
    discord_app,
    discord_settings,
    is_balanced,
)

CODE = [f"    total_{i} = compute(values[{i}])  # step {i}" for i in range(100)]
LONG = "\n".join(
    [
        "Here is the plan. " * 20,
        "",
        "#### Details",
        "| name | price |",
        "|------|-------|",
        "| A100 | high  |",
        "",
        "```python",
        "def run(values):",
        *CODE,
        "    return total_0",
        "```",
        "",
        "That is all. " * 30,
    ]
)


def posts_to(discord: FakeDiscord, channel: str) -> list[str]:
    return [p.content for p in discord.in_channel(channel)]


async def test_a_long_markdown_reply_arrives_in_parts_with_whole_code_blocks(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text(LONG)]
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        mid = discord_fake.say(f"{MENTION} plan it")
        await discord_fake.until(lambda _: "That is all." in "".join(posts_to(discord_fake, mid)))
    parts = posts_to(discord_fake, mid)
    assert len(parts) >= 3  # ~4,500 characters
    assert all(len(part) <= 2000 and is_balanced(part) for part in parts)
    assert parts[0].startswith("**Coordinator:** Here is the plan.")
    whole = "\n".join(parts)
    assert "**Details**" in whole and "####" not in whole
    assert "```\nname | price\n-----+------\nA100 | high\n```" in whole
    code_lines = [line for line in whole.split("\n") if line.startswith("    total_")]
    assert code_lines == CODE  # every line once, in order, across the parts
    reopened = [part for part in parts[1:] if part.startswith("```python")]
    assert reopened, "a part that continues the code block reopens it with its language"


async def test_a_short_rate_limit_is_waited_out_and_the_reply_posted_once(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text("after the limit")]
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        discord_fake.fail_posts(429, retry_after=0.3)
        asked = time.monotonic()
        mid = discord_fake.say(f"{MENTION} go")
        await discord_fake.until(lambda _: bool(discord_fake.in_channel(mid)))
    assert posts_to(discord_fake, mid) == ["**Coordinator:** after the limit"]
    assert discord_fake.in_channel(mid)[0].at - asked >= 0.3
    retries = [e["data"]["error"] for e in events(settings.data_dir, "outbox.retry")]
    assert not any("429" in error for error in retries)  # discord.py waited in place


async def test_a_rate_limit_discord_py_gives_up_on_goes_back_to_the_outbox_with_retry_after(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text("eventually")]
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        discord_fake.fail_posts(429, retry_after=1, edge=True)
        mid = discord_fake.say(f"{MENTION} go")
        await discord_fake.until(lambda _: bool(discord_fake.in_channel(mid)))
    assert posts_to(discord_fake, mid) == ["**Coordinator:** eventually"]
    # only the 429 counts: aiohttp's client now and then hits ServerDisconnectedError on
    # a reused keep-alive connection here, a separate transient error the outbox retries
    retries = [e["data"] for e in events(settings.data_dir, "outbox.retry")]
    assert [r["delay"] for r in retries if "429" in r["error"]] == [1.0]  # its Retry-After


async def test_a_server_error_is_retried_and_a_split_message_resumes_at_the_failed_part(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text(LONG)]
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        discord_fake.fail_posts(503, after=1)  # the second part fails once
        mid = discord_fake.say(f"{MENTION} plan it")
        await discord_fake.until(lambda _: "That is all." in "".join(posts_to(discord_fake, mid)))
    parts = posts_to(discord_fake, mid)
    assert len(parts) == len(set(parts)) >= 3  # no part posted twice
    retries = [e["data"]["error"] for e in events(settings.data_dir, "outbox.retry")]
    assert sum(error.startswith("Discord answered 503 ") for error in retries) == 1


async def test_forbidden_is_a_permanent_failure_reported_to_home(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    home = f"discord:{dp.RANDOM}"
    settings = discord_settings(tmp_path, fake, discord_fake, SWITCHBOARD_HOME=home)
    async with discord_app(settings) as app:
        discord_fake.fail_posts(403, code=50013)
        app.human.say(Outbound("coordinator", Target.parse(f"discord:{dp.GENERAL}"), "hi"))
        app.human.say(Outbound("coordinator", Target.parse("discord:12345"), "to nowhere"))
        await discord_fake.until(lambda _: len(discord_fake.in_channel(str(dp.RANDOM))) == 2)
    failed = events(settings.data_dir, "outbox.failed")
    assert [e["data"]["target"] for e in failed] == [f"discord:{dp.GENERAL}", "discord:12345"]
    assert "403" in failed[0]["data"]["error"] and "Send Messages" in failed[0]["data"]["error"]
    assert "404 (code 10003)" in failed[1]["data"]["error"]
    notices = posts_to(discord_fake, str(dp.RANDOM))
    assert notices[0].startswith(
        f"**Switchboard:** Could not deliver a message from coordinator to discord:{dp.GENERAL}"
    )
    assert posts_to(discord_fake, str(dp.GENERAL)) == []


async def test_home_target_gets_messages_of_no_conversation(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    settings = discord_settings(
        tmp_path, fake, discord_fake, SWITCHBOARD_HOME=f"discord:{dp.RANDOM}"
    )
    async with discord_app(settings) as app:
        assert app.human.home is not None
        app.human.say(Outbound("coordinator", app.human.home, "Daily summary: all good"))
        await discord_fake.until(lambda _: bool(discord_fake.in_channel(str(dp.RANDOM))))
    assert posts_to(discord_fake, str(dp.RANDOM)) == ["**Coordinator:** Daily summary: all good"]
    assert discord_fake.threads_started == []


async def test_without_thread_permission_the_reply_goes_beside_the_mention(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text("answered in the channel")]
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        discord_fake.fail_threads(403, code=50013)
        mid = discord_fake.say(f"{MENTION} no threads here")
        await discord_fake.until(lambda _: bool(discord_fake.posts))
    reply = discord_fake.posts[0]
    assert (reply.channel_id, reply.reference) == (str(dp.GENERAL), mid)
    assert reply.content == "**Coordinator:** answered in the channel"


async def test_a_split_message_cut_by_a_restart_resumes_at_the_part_not_posted(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = lambda call: [text(LONG)]
    settings = discord_settings(
        tmp_path, fake, discord_fake, SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS="4"
    )
    async with discord_app(settings):
        discord_fake.fail_posts(503, after=1)  # the second part fails; its retry is 2-4 s off
        mid = discord_fake.say(f"{MENTION} plan it")
        await eventually(lambda: bool(events(settings.data_dir, "outbox.retry")))
    assert len(posts_to(discord_fake, mid)) == 1
    async with discord_app(settings):  # a new process would find the same data dir
        await discord_fake.until(lambda _: "That is all." in "".join(posts_to(discord_fake, mid)))
    parts = posts_to(discord_fake, mid)
    assert len(parts) == len(set(parts)) >= 3  # no part posted twice
    assert parts[0].startswith("**Coordinator:** Here is the plan.")


async def test_a_post_whose_answer_was_lost_is_not_posted_again(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    # Discord created the message, but the connection broke before its answer: the
    # outbox retries, with the same nonce, and Discord answers with the first message.
    fake.responder = lambda call: [text("only once")]
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        discord_fake.lose_answers = 1
        mid = discord_fake.say(f"{MENTION} say it once")
        await eventually(lambda: bool(events(settings.data_dir, "message.sent")))
    assert posts_to(discord_fake, mid) == ["**Coordinator:** only once"]
    assert len(events(settings.data_dir, "outbox.retry")) == 1


async def test_a_lost_answer_retried_after_discords_nonce_window_is_found_not_reposted(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    # Discord enforces a nonce for a few minutes only: a retry after a longer outage
    # finds the part by its attempt record and the channel's history instead.
    fake.responder = lambda call: [text("still only once")]
    settings = discord_settings(
        tmp_path, fake, discord_fake, SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS="4"
    )
    async with discord_app(settings):
        discord_fake.lose_answers = 1
        mid = discord_fake.say(f"{MENTION} say it once")
        await eventually(lambda: bool(events(settings.data_dir, "outbox.retry")))
    discord_fake.nonces.clear()  # the outage outlasted Discord's nonce window
    async with discord_app(settings):
        await eventually(lambda: bool(events(settings.data_dir, "message.sent")), 20)
    assert posts_to(discord_fake, mid) == ["**Coordinator:** still only once"]
