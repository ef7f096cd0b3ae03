"""No Slack post twice across a crash: attempt records and the metadata lookup.

Slack has no idempotency key: a `chat.postMessage` whose answer is lost (the process
killed, the connection cut after Slack posted) leaves the outbox row pending. The
fake Slack posts and then cuts the connection (`lose_answers`), as a crash between
Slack's answer and our commit would; the retry, in this process or the next, finds
the post by its metadata and does not post again.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.core.messages import Outbound, Target
from bot.store.core import Store
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events, eventually
from tests.kits.slack_kit import (
    MENTION,
    slack_app,
    slack_settings,
    texts,
)

LONG = "\n\n".join(f"Paragraph {i}: " + "words and more words " * 40 for i in range(12))


def sent(data_dir: Path) -> list[str]:
    return [e["data"]["id"] for e in events(data_dir, "message.sent")]


async def test_a_post_whose_answer_was_lost_is_found_and_not_posted_again(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("only once")]
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        slack.lose_answers = 1
        ts = slack.post(f"{MENTION} say it once", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    assert texts(slack) == ["*coordinator:* only once"]
    assert slack.posts[0]["metadata"]["event_type"] == "switchboard_outbox"
    # (a stale keep-alive connection can cost one more retry, and so one more lookup)
    lookups = slack.method_calls("conversations.replies")
    assert lookups and {c.params["ts"] for c in lookups} == {ts}
    assert all(c.params["include_all_metadata"] in ("1", "true", True) for c in lookups)
    assert events(settings.data_dir, "outbox.retry")


async def test_killed_between_slacks_answer_and_the_commit_the_next_start_posts_nothing(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("before the crash")]
    # the retry waits 2-4 s: the process is gone before it comes
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS="4")
    async with slack_app(settings):
        slack.lose_answers = 1
        slack.post(f"{MENTION} hello", channel="C1")
        slack.post("a direct message", channel="D7", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 2)
        await eventually(lambda: len(events(settings.data_dir, "outbox.retry")) >= 1)
    assert len(sent(settings.data_dir)) == 1  # one of the two is pending, tried
    async with slack_app(settings):
        await eventually(lambda: len(sent(settings.data_dir)) == 2)
    assert sorted(texts(slack)) == ["*coordinator:* before the crash"] * 2
    assert len(slack.posts) == 2


async def test_a_split_message_cut_after_a_chunk_resumes_without_repeating_it(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text(LONG)]
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS="4")
    async with slack_app(settings):
        slack.lose_answers = 0
        slack.post(f"{MENTION} write a lot", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.lose_answers = 1  # the second chunk is posted, its answer lost
        await eventually(lambda: len(events(settings.data_dir, "outbox.retry")) >= 1)
    async with slack_app(settings):
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    chunks = texts(slack)
    assert len(chunks) >= 3 and len(set(chunks)) == len(chunks)
    assert "Paragraph 11" in chunks[-1]
    parts = [p["metadata"]["event_payload"]["part"] for p in slack.posts]
    assert parts == list(range(len(chunks)))


async def test_a_try_that_never_reached_slack_is_posted_after_the_lookup(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("eventually")]
    settings = slack_settings(tmp_path, fake, slack)
    async with slack_app(settings):
        slack.fail("chat.postMessage", 503, "service_unavailable")
        slack.post("hi", channel="D2", channel_type="im")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    assert texts(slack) == ["*coordinator:* eventually"]
    assert slack.method_calls("conversations.history")  # looked, found nothing


async def test_a_corrupt_attempt_record_is_quarantined_and_the_post_looked_up_first(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    settings = slack_settings(tmp_path, fake, slack)
    store = Store(settings.db_path)
    store.outbox.enqueue(
        Outbound("coordinator", Target.parse("slack:C5"), "queued before", id="o-1")
    )
    store.close()
    db = sqlite3.connect(settings.db_path)
    db.execute("INSERT INTO attempts VALUES ('o-1', '0', 'trying', '{broken', 0)")
    db.commit()
    db.close()
    async with slack_app(settings):
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    assert texts(slack) == ["*coordinator:* queued before"]
    problems = [e["data"]["problem"] for e in events(settings.data_dir, "store.corrupt")]
    assert len(problems) == 1 and problems[0].startswith("attempts row")
    history = slack.method_calls("conversations.history")
    assert history and "oldest" not in history[0].params  # no time: a bounded read
