"""The fake Slack's live surfaces (a mixin of `FakeSlack`), with Slack's limits:

- `assistant.threads.setStatus` (channel_id, thread_ts, status; at most 10
  `loading_messages`), recorded in `statuses`; `showing` holds each thread's status
  line as a person sees it: an empty status clears it, and so does a message the app
  sends in the thread (Slack: "removed if no message has been sent" in two minutes);
  `agents.sessions.setStatus` (`active`, `processing`, `suspended`, `closed`) in
  `sessions`; `reactions.add` in `reactions`.
- `chat.startStream` / `chat.appendStream` / `chat.stopStream`: a message written in
  pieces. `markdown_text` is at most 12,000 characters a call (`msg_too_long`);
  outside a DM (channel not `D...`) `recipient_team_id` and `recipient_user_id` are
  required (`missing_recipient_team_id`, `missing_recipient_user_id`); a stream not
  appended to for `stream_ttl` seconds expires server-side (`message_not_found` on
  append and stop, the message keeping what it had); a stopped stream answers
  `message_not_streaming`. `stopStream` takes `metadata` like `chat.postMessage`.
  Streams are in `streams` (ts -> message) and in the channel's history; chat.update
  edits them like posts. `fake.fail("chat.appendStream", 429)` rate-limits a call;
  `fake.lose_stream_answers = 1` starts the next stream and cuts its answer.

    fake.stream_ttl = 0.5
    fake.bot_messages("C1", thread_ts)   # the bot's posts and streams there, by ts
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from tests.fakes.kept import Kept
from tests.fakes.slack_ids import APP_ID, BOT_ID, BOT_USER, TEAM

if TYPE_CHECKING:
    from tests.fakes.slack_api import FakeSlack

MARKDOWN_LIMIT = 12_000
SESSION_STATES = {"active", "processing", "suspended", "closed"}
Answer = tuple[dict[str, Any], dict[str, str]]


def _error(code: str) -> Answer:
    return {"ok": False, "error": code}, {}


class StreamsApi:
    statuses: Kept[dict[str, Any]]
    showing: dict[tuple[str, str], str]
    sessions: Kept[dict[str, Any]]
    reactions: Kept[dict[str, Any]]
    streams: dict[str, dict[str, Any]]
    stream_ttl: float
    lose_stream_answers: int

    def _init_streams(self) -> None:
        self.statuses, self.sessions, self.reactions = Kept(), Kept(), Kept()
        self.showing = {}
        self.streams = {}
        self.stream_ttl = 300.0
        self.lose_stream_answers = 0  # streams to start, then cut instead of answering

    @property
    def messages(self: FakeSlack) -> list[dict[str, Any]]:
        """Every message the bot wrote: its posts, then its streams (finished or not)."""
        return [*self.posts, *self.streams.values()]

    def bot_messages(self: FakeSlack, channel: str, thread_ts: str | None) -> list[dict[str, Any]]:
        """The bot's messages in a thread (posts and streams, finished or not), by ts."""
        there = [
            m for m in self.messages if m["channel"] == channel and m.get("thread_ts") == thread_ts
        ]
        return sorted(there, key=lambda m: float(m["ts"]))

    async def _assistant_threads_setStatus(self: FakeSlack, params: dict, token: str) -> Answer:
        if not params.get("channel_id") or not params.get("thread_ts"):
            return _error("invalid_arguments")
        if len(params.get("loading_messages") or []) > 10:
            return _error("invalid_arguments")
        self.statuses.append({**params, "at": time.monotonic()})
        where = (str(params["channel_id"]), str(params["thread_ts"]))
        if params.get("status"):
            self.showing[where] = str(params["status"])
        else:
            self.showing.pop(where, None)
        self._notify()
        return {"ok": True}, {}

    async def _agents_sessions_setStatus(self: FakeSlack, params: dict, token: str) -> Answer:
        if params.get("status") not in SESSION_STATES or not params.get("channel_id"):
            return _error("invalid_arguments")
        self.sessions.append({**params, "at": time.monotonic()})
        self._notify()
        return {"ok": True}, {}

    async def _reactions_add(self: FakeSlack, params: dict, token: str) -> Answer:
        self.reactions.append(dict(params))
        self._notify()
        return {"ok": True}, {}

    def sent_in(self, channel: str, thread: Any) -> None:
        """The app sent a message in `thread`: Slack takes its status line down."""
        if thread:
            self.showing.pop((channel, str(thread)), None)

    async def _chat_startStream(self: FakeSlack, params: dict, token: str) -> Answer:
        channel, thread = str(params.get("channel", "")), params.get("thread_ts")
        if not channel or not thread:
            return _error("invalid_arguments")
        if not channel.startswith("D"):
            if not params.get("recipient_team_id"):
                return _error("missing_recipient_team_id")
            if not params.get("recipient_user_id"):
                return _error("missing_recipient_user_id")
        text = str(params.get("markdown_text") or "")
        if len(text) > MARKDOWN_LIMIT:
            return _error("msg_too_long")
        ts = self.next_ts()
        self.sent_in(channel, thread)
        message = {
            "type": "message",
            "channel": channel,
            "thread_ts": thread,
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "team": TEAM,
            "text": text,
            "ts": ts,
            "state": "streaming",
            "appends": 0,
            "touched": time.monotonic(),
        }
        self.streams[ts] = message
        self.remember(message)
        self._notify()
        if self.lose_stream_answers > 0:  # started; the bot never hears so
            self.lose_stream_answers -= 1
            from tests.fakes.slack_api import _CutConnection

            raise _CutConnection
        return {"ok": True, "channel": channel, "ts": ts}, {}

    async def _chat_appendStream(self: FakeSlack, params: dict, token: str) -> Answer:
        message, error = self._streaming(params)
        if message is None:
            return _error(error)
        text = str(params.get("markdown_text") or "")
        if len(text) > MARKDOWN_LIMIT:
            return _error("msg_too_long")
        message["text"] += text
        message["appends"] += 1
        message["touched"] = time.monotonic()
        self._notify()
        return {"ok": True, "channel": message["channel"], "ts": message["ts"]}, {}

    async def _chat_stopStream(self: FakeSlack, params: dict, token: str) -> Answer:
        message, error = self._streaming(params)
        if message is None:
            return _error(error)
        text = str(params.get("markdown_text") or "")
        if len(text) > MARKDOWN_LIMIT:
            return _error("msg_too_long")
        message["text"] += text
        metadata = params.get("metadata")
        if metadata:
            message["metadata"] = json.loads(metadata) if isinstance(metadata, str) else metadata
        message["state"] = "stopped"
        self._notify()
        return {"ok": True, "channel": message["channel"], "ts": message["ts"]}, {}

    def _streaming(self, params: dict) -> tuple[dict[str, Any] | None, str]:
        message = self.streams.get(str(params.get("ts", "")))
        if message is None or message["channel"] != params.get("channel"):
            return None, "message_not_found"
        if (
            message["state"] == "streaming"
            and time.monotonic() - message["touched"] > self.stream_ttl
        ):
            message["state"] = "expired"
        if message["state"] == "expired":
            return None, "message_not_found"
        if message["state"] != "streaming":
            return None, "message_not_streaming"
        return message, ""
