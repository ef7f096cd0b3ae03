"""The Slack channel over Socket Mode: the real slack-bolt/slack-sdk against the fake
Slack (Web API + websocket) and the fake Anthropic API, all on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.app import App
from bot.ledger.report import full_status
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_ID, BOT_USER, FakeSlack
from tests.kits.app_kit import events, eventually
from tests.kits.script import TeamScript
from tests.kits.slack_kit import (
    MENTION,
    heard,
    post_with,
    posted,
    slack_app,
    slack_settings,
    texts,
)


def all_acked(slack: FakeSlack) -> bool:
    return bool(slack.envelopes) and not slack.unacked()


async def test_mention_gets_one_reply_in_its_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} hello there", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
        # the mention came twice (app_mention + message); our reply came back as an echo
        await slack.until(lambda s: len(s.envelopes) == 3 and all_acked(s))
    reply = slack.posts[0]
    assert reply["channel"] == "C1" and reply["thread_ts"] == ts
    assert reply["text"] == "*coordinator:* heard: [UANN via slack]: hello there"
    assert len(fake.calls) == 1
    assert [e["type"] for e in events(tmp_path, "message.duplicate")] == ["message.duplicate"]
    assert events(tmp_path, "message.refused") == []


async def test_direct_message_gets_a_reply(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post("what's up?", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post("and now?", channel="D1", channel_type="im")
        await slack.until(lambda s: len(s.posts) == 2)
    assert [p["channel"] for p in slack.posts] == ["D1", "D1"]
    assert all("thread_ts" not in p for p in slack.posts)  # a DM is one conversation
    assert "what's up?" in fake.calls[1].all_text  # the second turn saw the first


async def test_follow_up_in_the_thread_needs_no_mention(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} first", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post("second, no mention", channel="C1", thread_ts=ts)
        slack.post("chatter the bot is not part of", channel="C1")
        slack.post("a thread the bot is not in", channel="C1", thread_ts="1600000000.000001")
        await slack.until(lambda s: len(s.posts) == 2)
        await slack.until(all_acked)
    assert slack.posts[1]["thread_ts"] == ts
    assert slack.posts[1]["text"].endswith("second, no mention")
    assert len(fake.calls) == 2 and "first" in fake.calls[1].all_text
    assert not any("chatter" in c.all_text or "not in" in c.all_text for c in fake.calls)


async def test_worker_question_is_answered_in_the_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    script = TeamScript()
    fake.responder = script
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} please research GPUs", channel="C1")
        await slack.until(posted("Alice asks"))
        slack.post("Data center only", channel="C1", thread_ts=ts)
        await slack.until(posted("Report based on"))
    question = post_with(slack, "Alice asks")
    assert question["thread_ts"] == ts
    assert question["text"] == (
        f"*Alice asks:* {script.question}\n_Reply in this thread to answer Alice._"
    )
    report = post_with(slack, "Report based on")
    assert report["thread_ts"] == ts and "Data center only" in report["text"]
    assert script.answers_seen == ["Data center only"]


async def test_at_name_reaches_the_worker_from_another_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    script = TeamScript()
    fake.responder = script
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} research GPUs", channel="C1")
        await slack.until(posted("Alice asks"))
        slack.post(f"{MENTION} @Zed hello", channel="C2")
        slack.post(f"{MENTION} @alice Consumer cards", channel="C2")
        await slack.until(posted("Report based on"))
        await slack.until(posted("no worker called Zed"))
    assert script.answers_seen == ["Consumer cards"]
    report = post_with(slack, "Report based on")
    assert (report["channel"], report["thread_ts"]) == ("C1", ts)  # the task's thread
    notice = post_with(slack, "Zed")
    assert notice["channel"] == "C2" and notice["text"].startswith("*switchboard:*")


async def test_broadcast_reaches_coordinator_and_workers(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    script = TeamScript()
    fake.responder = script
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        first = slack.post(f"{MENTION} research GPUs", channel="C1")
        await slack.until(posted("Alice asks"))
        ts = slack.post(f"{MENTION} @all deadline moved up", channel="C3")
        await slack.until(lambda s: any(p.get("thread_ts") == ts for p in s.posts))
        # a broadcast informs; it does not answer Alice's open question (issue 11)
        assert [w.status for w in app.store.agents.workers()] == ["parked"]
        slack.post("consumer", channel="C1", thread_ts=first)  # the answer, in the thread
        await slack.until(posted("Report based on: consumer"))
    assert "*coordinator:* coordinator heard: [UANN via slack]: deadline moved up" in texts(slack)
    alice = [c for c in fake.calls if c.agent == "Alice"]
    assert "deadline moved up" in alice[-1].all_text  # held while parked, read on resuming


async def test_disallowed_users_bots_and_our_own_posts_are_ignored(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    settings = slack_settings(tmp_path, fake, slack, SLACK_ALLOWED_USERS="UANN")
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} hi", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.post(f"{MENTION} let me in", user="UEVE", channel="C1")
        slack.post("me too", user="UEVE", channel="D9", channel_type="im")
        other_bot = {"bot_id": "BOTHER", "subtype": "bot_message", "username": "ci"}
        slack.post(f"{MENTION} build failed", user="", channel="C1", thread_ts=ts, **other_bot)
        own = {"bot_id": BOT_ID, "app_id": "A0FAKE"}
        slack.post("talking to myself", user=BOT_USER, channel="C1", thread_ts=ts, **own)
        await slack.until(lambda s: len(s.envelopes) == 9 and all_acked(s))
    assert len(fake.calls) == 1 and len(slack.posts) == 1
    refused = [(e["data"]["reason"], e["data"]["user"]) for e in events(tmp_path, "message.ref")]
    assert refused == [
        ("user not in SLACK_ALLOWED_USERS", "UEVE"),
        ("user not in SLACK_ALLOWED_USERS", "UEVE"),
        ("user not in SLACK_ALLOWED_USERS", "UEVE"),
        ("bot message", "BOTHER"),
        ("bot message", "BOTHER"),
    ]  # a mention arrives twice (app_mention + message): each copy is refused


async def test_dropped_socket_reconnects_and_events_keep_flowing(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        slack.post(f"{MENTION} before", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
        slack.drop()
        slack.post(f"{MENTION} after", channel="C1")  # queued until the client is back
        await slack.until(lambda s: s.connections == 2 and s.open_sockets == 1)
        await slack.until(lambda s: len(s.posts) == 2)
        assert re.search(r"slack\s+connected\s+Socket Mode", full_status(app.store))
    assert slack.posts[1]["text"].endswith("after")
    assert len(slack.method_calls("apps.connections.open")) == 2


async def test_rate_limited_post_is_delivered_once_after_retry_after(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    slack.fail("chat.postMessage", 429, retry_after=1)
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.post(f"{MENTION} hi", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
    first, second = slack.method_calls("chat.postMessage")
    assert second.at - first.at >= 0.95
    assert len(slack.posts) == 1
    retry = events(tmp_path, "outbox.retry")
    assert [e["data"]["delay"] for e in retry] == [1.0]
    assert "Slack rate limit" in retry[0]["data"]["error"]


async def test_long_markdown_reply_is_converted_and_split(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    code = "\n".join(f"    total_{i} = compute(a < b, {i})" for i in range(250))
    answer = (
        f"**Summary**: see [docs](https://example.com/docs).\n\n```python\n{code}\n```\n\nDone."
    )
    fake.responder = lambda call: [text(answer)]
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post(f"{MENTION} show me the code", channel="C1")
        await slack.until(lambda s: any(t.endswith("Done.") for t in texts(s)))
    chunks = texts(slack)
    assert len(chunks) >= 3 and all(len(c) <= 4000 for c in chunks)
    assert all(p["thread_ts"] == ts for p in slack.posts)
    assert chunks[0].startswith("*coordinator:* *Summary*: see <https://example.com/docs|docs>.")
    assert all(c.count("```") == 2 for c in chunks[:-1])  # each chunk renders on its own
    joined = "\n".join(chunks)
    for i in range(250):
        assert f"total_{i} = compute(a &lt; b, {i})" in joined
    assert "**" not in joined


async def test_edits_and_deletes(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        ts = slack.post("forgot to mention the bot", channel="C1")
        edit = {
            "type": "message",
            "subtype": "message_changed",
            "channel": "C1",
            "channel_type": "channel",
            "message": {"type": "message", "user": "UANN", "text": f"{MENTION} now", "ts": ts},
            "previous_message": {"type": "message", "user": "UANN", "text": "forgot", "ts": ts},
        }
        slack.send_event(edit)  # the edit adds the mention: handled as that message
        await slack.until(lambda s: len(s.posts) == 1)
        again = {**edit, "message": {**edit["message"], "text": f"{MENTION} now!"}}
        again["previous_message"] = edit["message"]
        slack.send_event(again)  # an edit of an answered message changes nothing
        slack.send_event(
            {
                "type": "message",
                "subtype": "message_deleted",
                "channel": "C1",
                "deleted_ts": ts,
                "previous_message": again["message"],
            }
        )
        await slack.until(all_acked)
    assert len(fake.calls) == 1 and slack.posts[0]["thread_ts"] == ts
    assert [e["data"]["id"] for e in events(tmp_path, "message.edited")] == [f"C1:{ts}"]
    assert [e["data"]["id"] for e in events(tmp_path, "message.deleted")] == [f"C1:{ts}"]


async def test_malformed_events_are_refused_and_acked(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)):
        slack.send_event({"type": "app_mention", "text": MENTION})  # no channel, no ts
        slack.send_event({"type": "message", "channel": "D1", "channel_type": "im", "ts": "1.2"})
        slack.send_event({"type": "message", "channel": ["C1"], "text": 5, "ts": None})
        slack.send_event({"type": "reaction_added", "user": "UANN"})
        await slack.until(lambda s: len(s.envelopes) == 4 and all_acked(s))
        slack.post(f"{MENTION} still alive?", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1)
    reasons = [e["data"]["reason"] for e in events(tmp_path, "message.refused")]
    assert reasons == ["malformed event", "message without a user", "malformed event"]


async def test_permanent_slack_error_is_recorded(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        slack.post(f"{MENTION} hi", channel="CGONE1")
        await slack.until(lambda s: bool(s.method_calls("chat.postMessage")))
        await slack.until(lambda s: app.store.outbox.outbox_counts().get("failed") == 1)
    failed = events(tmp_path, "outbox.failed")
    assert (
        "channel_not_found (no such channel, or the bot cannot see it)"
        in failed[0]["data"]["error"]
    )
    assert len(slack.method_calls("chat.postMessage")) == 1  # not retried


async def test_custom_username_when_the_app_may(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = heard
    with FakeSlack(scopes="chat:write,chat:write.customize") as slack:
        async with slack_app(slack_settings(tmp_path, fake, slack)):
            slack.post(f"{MENTION} hi", channel="C1")
            await slack.until(lambda s: len(s.posts) == 1)
            await slack.until(lambda s: len(s.envelopes) == 3 and all_acked(s))
    assert slack.posts[0]["username"] == "coordinator"
    assert slack.posts[0]["text"] == "heard: [UANN via slack]: hi"
    assert len(fake.calls) == 1  # the echo (a bot_message with our bot id) was ignored


@pytest.mark.parametrize(
    ("method", "variable"),
    [("auth.test", "SLACK_BOT_TOKEN"), ("apps.connections.open", "SLACK_APP_TOKEN")],
)
async def test_a_token_slack_refuses_fails_the_channel_naming_the_variable(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, method: str, variable: str
) -> None:
    slack.fail(method, status=200, error="token_revoked")
    app = App(slack_settings(tmp_path, fake, slack), ["slack"])
    await app.start()
    try:
        await eventually(lambda: app.store.health()[0][1] == "failed")
        (health,) = app.store.health()
        assert health[2] == f"{variable} refused by Slack: token_revoked"
        assert len(slack.method_calls(method)) == 1  # refused: not retried
    finally:
        await app.stop()
