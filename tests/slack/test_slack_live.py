"""Slack live progress: the status line before the answer, the answer streamed into the
thread and finished as the outbox row's text, and every fallback ending in one whole
message. The real slack-sdk against the fake Slack (slack_streams.py: Slack's limits
and errors), the fake model streaming its answer paced."""

from __future__ import annotations

import asyncio
from pathlib import Path

from channels.slack.progress import CLEAR_AFTER_SECONDS
from tests.fakes.anthropic_api import FakeAnthropic, Reply, text
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_ids import TEAM
from tests.kits.app_kit import events, eventually
from tests.kits.proc import Switchboard
from tests.kits.script import TeamScript
from tests.kits.slack_kit import (
    MENTION,
    slack_app,
    slack_settings,
)

ANSWER = (
    "The deploy went out at **noon**. All checks are green, the canary held for an hour, "
    "and nothing needs doing today."
)
STREAMED = f"**coordinator:** {ANSWER}"
ON = {"SWITCHBOARD_STREAMING": "on"}


def sent(data_dir: Path) -> list[str]:
    return [e["data"]["id"] for e in events(data_dir, "message.sent")]


def paced(call: object) -> Reply:
    return Reply([text(ANSWER)], pace=0.12, piece=12)


async def test_status_line_shows_before_a_slow_answer(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: Reply([text("done")], delay=1.5)
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} slow one", channel="C1")
        await slack.until(lambda s: len(s.statuses) >= 1, timeout=1.0)
        assert not slack.posts and not slack.streams  # progress before any answer
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
        await slack.until(lambda s: not s.showing)  # down at the end: the answer took it
        await asyncio.sleep(CLEAR_AFTER_SECONDS + 0.5)
    first = slack.statuses[0]
    assert (first["channel_id"], first["thread_ts"], first["status"]) == ("C1", ts, "is thinking…")
    assert [s["status"] for s in slack.statuses] == ["is thinking…"]  # no clearing call


async def test_a_silent_turn_clears_its_status_line(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Nothing is posted, so nothing takes the line down: the bot clears it itself."""
    fake.responder = lambda call: Reply([text("NO_REPLY")], delay=1.0)
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_STREAMING="off")
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} thanks, that is all", channel="C1")
        await slack.until(lambda s: s.showing.get(("C1", ts)) == "is thinking…", timeout=1.0)
        await slack.until(lambda s: not s.showing, timeout=CLEAR_AFTER_SECONDS + 15)
    assert [s["status"] for s in slack.statuses] == ["is thinking…", ""]
    assert not slack.posts and not slack.streams


async def test_streamed_answer_is_one_message_equal_to_the_outbox_text(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paced
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} how did the deploy go?", channel="C1")
        await slack.until(lambda s: any(m["appends"] for m in s.streams.values()))
        streaming = next(iter(slack.streams.values()))
        assert streaming["state"] == "streaming" and ANSWER not in streaming["text"]
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("C1", ts)
    assert message["text"] == STREAMED and message["state"] == "stopped"
    assert message["metadata"]["event_type"] == "switchboard_outbox"
    assert not slack.posts and not slack.updates
    start = slack.method_calls("chat.startStream")[0].params
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("UANN", TEAM)


async def test_a_refused_stream_falls_back_to_post_and_update(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paced
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        slack.fail("chat.startStream", 200, "missing_recipient_team_id")  # Slack Connect
        ts = slack.post(f"{MENTION} how did the deploy go?", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("C1", ts)
    assert (
        message["text"]
        == "*coordinator:* The deploy went out at *noon*. " + ANSWER.split("**. ")[1]
    )
    assert message["metadata"]["event_payload"]["part"] == 0
    assert len(slack.posts) == 1 and slack.updates


async def test_an_expired_stream_is_finished_by_update(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    slack.stream_ttl = 0.2
    fake.responder = lambda call: Reply([text(ANSWER)], pace=0.4, piece=40)
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} how did the deploy go?", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("C1", ts)
    assert message["state"] == "expired"
    assert message["text"].startswith("*coordinator:* The deploy went out at *noon*.")
    assert message["metadata"]["event_payload"]["part"] == 0
    assert not slack.posts


async def test_rate_limited_appends_wait_and_the_answer_stays_whole(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paced
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        slack.fail("chat.appendStream", 429, retry_after=1)
        ts = slack.post(f"{MENTION} how did the deploy go?", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("C1", ts)
    assert message["text"] == STREAMED


async def test_a_dm_is_posted_and_edited_as_it_is_written(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paced
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        slack.post("how did the deploy go?", channel="D1", channel_type="im")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("D1", None)
    assert message["text"].startswith("*coordinator:* The deploy went out at *noon*.")
    assert len(slack.posts) == 1 and not slack.streams


async def test_reactions_when_asked_for(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("ok")]
    settings = slack_settings(tmp_path, fake, slack, SWITCHBOARD_ACK_REACTIONS="on", **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} hi", channel="C1")
        await slack.until(lambda s: len(s.reactions) == 2)
    assert [(r["name"], r["timestamp"]) for r in slack.reactions] == [
        ("eyes", ts),
        ("white_check_mark", ts),
    ]


LONG_ANSWER = " ".join(f"Step {i}: checked and fine." for i in range(1, 13)) + " The end."


def test_killed_mid_stream_the_restart_finishes_that_message(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: Reply([text(LONG_ANSWER)], pace=0.1, piece=10)
    env = {**fake.env(), **slack.env(), "SLACK_PACE_SECONDS": "0.02"}
    data = ["--data-dir", str(tmp_path / "data")]
    run = Switchboard([*data, "run"], env, tmp_path)
    try:
        slack.wait_for(lambda s: s.open_sockets == 1, 20)
        ts = slack.post(f"{MENTION} check everything", channel="C1")
        slack.wait_for(lambda s: any(m["appends"] for m in s.streams.values()), 20)
        run.kill()  # kill -9 in the middle of the stream
        [cut] = slack.bot_messages("C1", ts)
        assert "The end." not in cut["text"]
        run = Switchboard([*data, "run"], env, tmp_path)
        slack.wait_for(lambda s: bool(s.bot_messages("C1", ts)[0].get("metadata")), 30)
    finally:
        run.proc.terminate()
        run.proc.wait(15)
    [message] = slack.bot_messages("C1", ts)  # the same message, finished; no second one
    assert message["ts"] == cut["ts"] and message["state"] == "stopped"
    assert message["text"].startswith("*coordinator:* Step 1:")
    assert message["text"].endswith("The end.")
    assert message["metadata"]["event_payload"]["part"] == 0
    assert not slack.posts


async def test_stop_as_a_reply_in_the_thread_ends_the_turn(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: Reply([text("never posted")], delay=30)
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} take your time", channel="C1")
        await eventually(lambda: len(fake.calls) == 1)
        slack.post("stop", channel="C1", thread_ts=ts)
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    assert [m["text"] for m in slack.bot_messages("C1", ts)] == ["*switchboard:* Stopped."]
    assert len(fake.calls) == 1


async def test_the_stop_button_ends_the_stream_where_it_was(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: Reply([text(LONG_ANSWER)], pace=0.2, piece=10)
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} check everything", channel="C1")
        await slack.until(lambda s: bool(s.streams))
        [stream_ts] = slack.streams
        slack.send_event(
            {
                "type": "agent_session_stopped",
                "channel": "C1",
                "thread_ts": ts,
                "user": "UANN",
                "event_ts": slack.next_ts(),
                "streaming_message_ts": [stream_ts],
            }
        )
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
        await eventually(lambda: events(settings.data_dir, "turn.stopped") != [])
    cut, ack = slack.bot_messages("C1", ts)
    assert cut["state"] == "stopped" and "The end." not in cut["text"]
    assert ack["text"] == "*switchboard:* Stopped."
    assert len(fake.calls) == 1


async def test_a_200_kb_answer_shows_its_start_live_and_arrives_whole(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    huge = "\n\n".join(f"Paragraph {i}: " + "all fine here " * 30 for i in range(500))
    assert len(huge) > 200_000
    fake.responder = lambda call: Reply([text(huge)], pace=0.001, piece=2000)
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} tell me everything", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1, 60)
    messages = slack.bot_messages("C1", ts)
    assert all(len(m["text"]) <= 12_000 for m in slack.streams.values())
    assert messages[0]["text"].startswith("*coordinator:* Paragraph 0:")  # the stream, updated
    assert "Paragraph 499:" in messages[-1]["text"]
    assert len(messages) == len(slack.posts) + 1
    parts = [m["metadata"]["event_payload"]["part"] for m in messages]
    assert parts == list(range(len(messages)))


async def test_a_parked_worker_shows_its_wait_and_names_itself_while_working(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = TeamScript()
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        ts = slack.post(f"{MENTION} please research GPUs", channel="C1")
        await slack.until(lambda s: any(m["status"] == "suspended" for m in s.sessions))
        slack.post("Data center only", channel="C1", thread_ts=ts)
        await slack.until(lambda s: [m["status"] for m in s.sessions] == ["suspended", "active"])
        await slack.until(lambda s: any("Report based on" in m["text"] for m in s.messages))
    waiting = slack.sessions[0]
    assert (waiting["channel_id"], waiting["thread_ts"]) == ("C1", ts)
    assert waiting["title"] == "Alice waits for an answer"
    said = [s["status"] for s in slack.statuses]
    # the worker's steps, named, where its task began ("Alice: Running publish"); its wait
    # shows as the suspended session above (a status line for it can be overtaken by the
    # coordinator's turn ending: the latest status wins)
    assert any(status.startswith("Alice: ") for status in said), said


async def test_a_stream_whose_start_answer_was_lost_is_found_not_started_twice(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paced
    settings = slack_settings(tmp_path, fake, slack, **ON)
    async with slack_app(settings):
        slack.lose_stream_answers = 1
        ts = slack.post(f"{MENTION} how did the deploy go?", channel="C1")
        await eventually(lambda: len(sent(settings.data_dir)) == 1)
    [message] = slack.bot_messages("C1", ts)
    assert message["text"].startswith("*coordinator:* The deploy went out at *noon*.")
    assert message["text"].endswith("nothing needs doing today.")
    assert message["metadata"]["event_payload"]["part"] == 0
    assert len(slack.method_calls("chat.startStream")) == 1 and not slack.posts
