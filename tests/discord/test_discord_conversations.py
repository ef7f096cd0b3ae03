"""Discord conversations through the real discord.py against the fake Discord.

A mention opens a thread on itself, a DM is its own conversation, follow-ups in the
bot's threads need no mention, a worker's question is answered in its thread, and
`@Name` reaches a worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.store.core import Store
from channels.discord import threads as threads_module
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.discord_api import FakeDiscord
from tests.kits.app_kit import events, eventually
from tests.kits.discord_kit import (
    MENTION,
    channel_of,
    discord_app,
    discord_settings,
    post_with,
    posted,
)
from tests.kits.script import TeamScript

GENERAL = str(dp.GENERAL)

SAID_ANN = "[Ann (900000000000001001) via discord]"  # unlisted: handle plus id
SAID_BOB = "[Bob (900000000000001002) via discord]"


def heard(call: Call) -> list[dict]:
    return [text(f"heard {len(call.messages)}: {call.last_text}")]


async def test_mention_gets_a_reply_in_a_thread_on_it_and_follow_ups_need_no_mention(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings):
        mid = discord_fake.say(f"{MENTION} hello there")
        await discord_fake.until(lambda posts: any(p.channel_id == mid for p in posts))
        assert discord_fake.threads_started == [mid]  # the thread has the mention's id
        first = discord_fake.in_channel(mid)[0]
        assert first.content == f"**Coordinator:** heard 1: {SAID_ANN}: hello there"

        discord_fake.say("and one more thing", channel=mid)  # no mention, in our thread
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(mid)) == 2)
        calls_before = len(fake.calls)
        discord_fake.say("people chatting in the channel, not to the bot")
        discord_fake.say(f"{MENTION} a second topic")
        await discord_fake.until(lambda posts: len(discord_fake.threads_started) == 2)

    follow_up = discord_fake.in_channel(mid)[1].content
    assert follow_up == f"**Coordinator:** heard 3: {SAID_ANN}: and one more thing"
    assert [c.last_text for c in fake.calls[calls_before:]] == [f"{SAID_ANN}: a second topic"]
    received = events(settings.data_dir, "message.received")
    assert [e["data"]["conversation"] for e in received][:2] == [f"discord:{GENERAL}/{mid}"] * 2
    assert discord_fake.in_channel(GENERAL) == []  # nothing answered in the channel itself


async def test_a_thread_that_went_quiet_still_takes_follow_ups_and_its_answer_reopens_it(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    """Discord archives a thread after its auto-archive minutes without a message, and
    discord.py then drops it from its cache; a person's message there reopens it."""
    fake.responder = heard
    settings = discord_settings(tmp_path, fake, discord_fake)
    async with discord_app(settings) as app:
        mid = discord_fake.say(f"{MENTION} hello there")
        await discord_fake.until(lambda posts: any(p.channel_id == mid for p in posts))
        discord_fake.minute = 0.0005  # the thread's day of quiet passes in 0.72 s
        await discord_fake.until(lambda _: mid in discord_fake.archived, timeout=5)
        await eventually(lambda: channel_of(app).client.get_channel(int(mid)) is None)
        discord_fake.minute = 60.0
        discord_fake.say("back after a day: one more thing", channel=mid)  # no mention
        await discord_fake.until(lambda posts: len(discord_fake.in_channel(mid)) == 2)
    assert discord_fake.threads_started == [mid]
    follow_up = discord_fake.in_channel(mid)[1].content
    assert follow_up == f"**Coordinator:** heard 3: {SAID_ANN}: back after a day: one more thing"
    assert not discord_fake.channels[mid]["thread_metadata"]["archived"]


async def test_dm_gets_a_reply_in_the_dm(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    fake.responder = heard
    dm = discord_fake.open_dm(dp.BOB)
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        discord_fake.say("hi, can you help?", author=dp.BOB, channel=dm)
        await discord_fake.until(lambda posts: bool(discord_fake.in_channel(dm)))
    reply = discord_fake.in_channel(dm)[0]
    assert reply.content == f"**Coordinator:** heard 1: {SAID_BOB}: hi, can you help?"
    assert discord_fake.threads_started == []


async def test_worker_question_answered_in_the_thread_wakes_it_and_its_result_lands_there(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    script = TeamScript()
    fake.responder = script
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)) as app:
        mid = discord_fake.say(f"{MENTION} please research GPUs")
        await discord_fake.until(posted("Alice asks"))
        question = post_with(discord_fake, "Alice asks")
        assert question.channel_id == mid
        assert question.content == (
            "**Alice asks:** Data center or consumer GPUs?\n"
            "-# Reply in this thread to answer Alice."
        )
        assert app.store.agents.workers()[0].status == "parked"

        discord_fake.say("Data center only", channel=mid)
        await discord_fake.until(posted("Report based on"))
        assert [w.status for w in app.store.agents.workers()] == ["done"]
    result = post_with(discord_fake, "Report based on")
    assert result.channel_id == mid
    assert result.content == "**Coordinator:** Alice finished. Report based on: Data center only"
    assert script.answers_seen == ["Data center only"]


async def test_question_to_a_channel_opens_a_thread_on_the_question(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    script = TeamScript(via=f"discord:{dp.RANDOM}")
    fake.responder = script
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        mid = discord_fake.say(f"{MENTION} please research GPUs")
        await discord_fake.until(posted("Alice asks"))
        question = post_with(discord_fake, "Alice asks")
        assert question.channel_id == str(dp.RANDOM)
        assert question.content.endswith("-# Reply in the thread on this message to answer Alice.")
        await discord_fake.until(lambda _: question.id in discord_fake.threads_started)

        discord_fake.say("Consumer", channel=question.id)  # in the question's thread
        await discord_fake.until(posted("Report based on"))
    result = post_with(discord_fake, "Report based on")
    assert result.channel_id == mid  # the coordinator answers where the work began
    assert script.answers_seen == ["Consumer"]


async def test_at_name_in_the_thread_reaches_the_worker(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    script = TeamScript()
    fake.responder = script
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)):
        mid = discord_fake.say(f"{MENTION} research it")
        await discord_fake.until(posted("Alice asks"))
        discord_fake.say(f"{MENTION} @Alice focus on pricing", channel=mid)
        await discord_fake.until(posted("Report based on: focus on pricing"))
    assert script.answers_seen == ["focus on pricing"]
    alice = [c for c in fake.calls if c.agent == "Alice"]
    assert (
        "Ann (900000000000001001) answered: focus on pricing" in alice[-1].last_text
    )  # mention and @Alice gone


async def test_at_all_in_a_dm_reaches_the_coordinator_and_every_worker(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord
) -> None:
    script = TeamScript()
    fake.responder = script
    async with discord_app(discord_settings(tmp_path, fake, discord_fake)) as app:
        mid = discord_fake.say(f"{MENTION} research it")
        await discord_fake.until(posted("Alice asks"))
        dm = discord_fake.open_dm()
        discord_fake.say("@all deadline moved up", channel=dm)
        await discord_fake.until(lambda posts: bool(discord_fake.in_channel(dm)))
        # a broadcast informs; it does not answer Alice's open question (issue 11)
        assert [w.status for w in app.store.agents.workers()] == ["parked"]
        discord_fake.say("Consumer", channel=mid)  # the answer, in the question's thread
        await discord_fake.until(posted("Report based on: Consumer"))
    assert discord_fake.in_channel(dm)[0].content == (
        f"**Coordinator:** coordinator heard: {SAID_ANN}: deadline moved up"
    )
    assert script.answers_seen == ["Consumer"]
    alice = [c for c in fake.calls if c.agent == "Alice"]
    assert "deadline moved up" in alice[-1].all_text  # held while parked, read on resuming


def test_the_threads_held_in_memory_are_bounded_and_an_older_one_is_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: every thread the bot joined stayed in memory until the next start; now
    the newest MAX_KNOWN are held, and an older one is still known (from the store)."""
    monkeypatch.setattr(threads_module, "MAX_KNOWN", 8)
    store = Store(tmp_path / "switchboard.db")
    reads: list[str] = []
    real_get = store.get_kv
    monkeypatch.setattr(store, "get_kv", lambda key: (reads.append(key), real_get(key))[1])
    threads = threads_module.Threads(store)
    ids = [str(1_000_000 + n) for n in range(30)]
    for thread in ids:
        threads.join(thread, "900")
    threads.note("2000000", "900")  # a mention's thread, before its reply is delivered
    assert len(threads._parents) <= 8
    assert threads.parent("2000000") == "900" and threads.is_ours(ids[-1]) and not reads
    assert all(threads.parent(t) == "900" for t in ids)  # the old ones from the store
    assert reads and not threads.is_ours("1000005000")  # never joined (newer than the floor)
    assert not threads.is_ours("999999")  # never joined, older: the store says so
    reads.clear()
    assert not threads.is_ours(ids[0], maybe_thread=False)  # a guild's own channel: no read
    assert not reads
    for n in range(threads_module.MAX_NAMES + 5):  # names of replies never delivered
        threads.name(str(3_000_000 + n), f"question {n}")
    assert len(threads.names) == threads_module.MAX_NAMES
    assert (
        threads.names[str(3_000_000 + threads_module.MAX_NAMES + 4)]
        == f"question {threads_module.MAX_NAMES + 4}"
    )
    again = threads_module.Threads(store)  # a restart reads the newest back
    assert len(again._parents) <= 8 and again.is_ours(ids[1])
    store.close()
