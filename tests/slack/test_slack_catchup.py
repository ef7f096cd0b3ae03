"""Slack catch-up: what was said while the bot could not hear it is read back, once.

Slack redelivers an unacked event for a few minutes and then drops it (the fake's
`expire()`). Messages posted while the bot is down are read back at the next
connection from `conversations.history` / `conversations.replies` (cursor-paged,
429 honoured) and answered exactly once, also when Slack does redeliver them.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bot.store.core import Store
from channels.slack import threads as threads_module
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events, eventually
from tests.kits.slack_kit import (
    MENTION,
    free_port,
    slack_app,
    slack_settings,
    texts,
)


def echo(call: Call) -> list[dict]:
    lines = [line.split("]: ", 1)[-1] for line in call.last_text.splitlines() if "]: " in line]
    return [text("got: " + " | ".join(lines))]


def answered(slack: FakeSlack, words: str) -> int:
    return sum(words in t for t in texts(slack))


def caught_up(data_dir: Path) -> list[dict]:
    return [e["data"] for e in events(data_dir, "channel.caught_up")]


async def test_a_mention_made_while_the_bot_was_down_past_slacks_retries_is_answered_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = echo
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1)
        thread = slack.post(f"{MENTION} first", channel="C1")
        slack.post("hello in a DM", channel="D1", channel_type="im")
        await slack.until(lambda s: answered(s, "first") and answered(s, "hello in a DM"))
    slack.post(f"{MENTION} mentioned while down", channel="C1")
    slack.post("in the thread while down", channel="C1", thread_ts=thread)
    slack.post("a DM while down", channel="D1", channel_type="im")
    slack.post("chatter nobody asked the bot about", channel="C1")
    slack.expire()  # down longer than Slack's retry window: those events are gone
    async with slack_app(settings):
        await slack.until(
            lambda s: all(
                answered(s, words)
                for words in ("mentioned while down", "in the thread while down", "a DM while down")
            ),
            20,
        )
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2)
    async with slack_app(settings):  # and a third start answers nothing again
        await eventually(lambda: len(caught_up(settings.data_dir)) == 3)
    for words in ("first", "mentioned while down", "in the thread while down", "a DM while down"):
        assert answered(slack, words) == 1, words
    assert answered(slack, "chatter") == 0
    reads = slack.method_calls("conversations.history") + slack.method_calls(
        "conversations.replies"
    )
    assert all(c.params.get("include_all_metadata") in ("1", "true") for c in reads)
    assert caught_up(settings.data_dir)[1]["messages"] >= 3


async def test_events_slack_redelivers_and_catch_up_reads_are_answered_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = echo
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1)
        slack.post(f"{MENTION} before", channel="C1")
        await slack.until(lambda s: answered(s, "before") == 1)
    slack.post(f"{MENTION} both ways", channel="C1")  # queued by Slack, and in history
    async with slack_app(settings):
        await slack.until(lambda s: answered(s, "both ways") >= 1, 20)
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2)
        await eventually(lambda: not slack.unacked())
    assert answered(slack, "both ways") == 1
    assert events(settings.data_dir, "message.duplicate")


async def test_history_rate_limits_are_waited_out_and_the_catch_up_resumes(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = echo
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1)
        thread = slack.post(f"{MENTION} start", channel="C1")
        await slack.until(lambda s: answered(s, "start") == 1)
    for i in range(450):  # three pages of replies
        slack.remember(
            {
                "type": "message",
                "channel": "C1",
                "user": "UBOB",
                "text": f"note {i}",
                "ts": slack.next_ts(),
                "thread_ts": thread,
            }
        )
    slack.post("the question at the end", channel="C1", thread_ts=thread)
    slack.expire()
    slack.fail("conversations.replies", 429, retry_after=1)
    slack.fail("conversations.replies", 429, retry_after=1)
    async with slack_app(settings):
        started = time.monotonic()
        await slack.until(lambda s: answered(s, "the question at the end") == 1, 30)
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2, 20)
    replies = slack.method_calls("conversations.replies")
    assert replies[1].at - replies[0].at >= 1.0 and replies[2].at - replies[1].at >= 1.0
    assert replies[0].params == replies[2].params  # the same page asked again
    assert any(c.params.get("cursor") for c in replies)  # and paged on from there
    assert time.monotonic() - started >= 2.0
    assert answered(slack, "note 449") == 1  # all in the one turn that came after


async def test_a_deleted_message_a_channel_the_bot_left_and_a_corrupt_mark(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = echo
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1)
        slack.post(f"{MENTION} in one", channel="C1")
        slack.post(f"{MENTION} in two", channel="C2")
        slack.post("a DM", channel="D3", channel_type="im")
        await slack.until(lambda s: answered(s, "in two") and answered(s, "in one"))
        await slack.until(lambda s: answered(s, "a DM") == 1)
    gone = slack.post(f"{MENTION} said then deleted", channel="C1")
    slack.delete("C1", gone)
    slack.post(f"{MENTION} kept", channel="C1")
    slack.post(f"{MENTION} unreadable now", channel="C2")
    slack.remove_bot("C2")
    slack.post("a DM while the mark was broken", channel="D3", channel_type="im")
    slack.expire()
    db = sqlite3.connect(settings.db_path)
    db.execute("UPDATE kv SET value = 'nonsense' WHERE key = 'slack.watermark.D3'")
    assert db.total_changes == 1
    db.commit()
    db.close()
    async with slack_app(settings) as (app, _):
        await slack.until(lambda s: answered(s, "kept") == 1, 20)
        await slack.until(lambda s: answered(s, "a DM while the mark was broken") == 1, 20)
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2)
        marks = app.store.kv_prefixed("slack.watermark.")
    assert answered(slack, "said then deleted") == 0
    assert answered(slack, "unreadable now") == 0
    assert answered(slack, "a DM") == 2  # the first, and the one after the broken mark
    assert caught_up(settings.data_dir)[-1]["forgotten"] == 2  # C2 and the thread in it
    assert "C2" not in marks and "C1" in marks and "D3" in marks
    problems = [e["data"]["problem"] for e in events(settings.data_dir, "store.corrupt")]
    assert len(problems) == 1 and problems[0].startswith("kv row slack.watermark.D3")


async def test_http_events_mode_catches_up_at_start(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = echo
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/slack/events"
    slack.http_endpoint = endpoint
    settings = slack_settings(
        tmp_path,
        fake,
        slack,
        mode="http",
        SWITCHBOARD_HTTP_HOST="127.0.0.1",
        SWITCHBOARD_HTTP_PORT=str(port),
    )
    async with slack_app(settings):
        await eventually(lambda: len(caught_up(settings.data_dir)) == 1)
        thread = slack.post(f"{MENTION} over http", channel="C1")
        await slack.until(lambda s: answered(s, "over http") == 1)
    slack.http_endpoint = None  # nobody listens: Slack retries, then gives up
    slack.post("in the thread while down", channel="C1", thread_ts=thread)
    slack.expire()
    slack.http_endpoint = endpoint
    async with slack_app(settings):
        await slack.until(lambda s: answered(s, "in the thread while down") == 1, 20)
        await eventually(lambda: len(caught_up(settings.data_dir)) == 2)
    assert answered(slack, "over http") == 1


def test_the_threads_held_in_memory_are_bounded_and_an_older_one_is_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: the set of threads the bot is in grew with every thread joined since the
    last restart; now the newest MAX_KNOWN are held, and an older one is still known."""
    monkeypatch.setattr(threads_module, "MAX_KNOWN", 8)
    store = Store(tmp_path / "switchboard.db")
    memory = threads_module.ThreadMemory(store)
    for n in range(30):
        memory.remember("C1", f"{1_700_000_000 + n}.000100")
    assert len(memory._known) <= 8
    assert all(memory.knows("C1", f"{1_700_000_000 + n}.000100") for n in range(30))
    assert not memory.knows("C1", "1700000003.000200")  # never joined: the store says so
    assert memory.recent(1_700_000_025)[0] == "C1/1700000029.000100"
    again = threads_module.ThreadMemory(store)  # a restart reads the newest back
    assert len(again._known) <= 8 and again.knows("C1", "1700000001.000100")
