"""A fake Slack on 127.0.0.1: the Web API, the Socket Mode websocket, HTTP Events delivery.

It runs in its own thread with its own event loop (a `ThreadedServer`), so it
serves an app in the test's loop or a `switchboard run` subprocess, and its timings
are a remote server's view. The real slack-sdk/slack-bolt talk to it over the wire.

Faithful where bots go wrong: a post that mentions the bot arrives twice
(`app_mention` and `message`, two event ids, the same channel + ts); the bot's own
posts come back as `message` events carrying its `bot_id`; an event is delivered
to the newest socket, queued while no socket is open, and acked by envelope id.

    fake.post("<@UBOT> hello", channel="C1")      # a person posts; returns the ts
    fake.fail("chat.postMessage", 429, retry_after=1)
    fake.drop()                                   # close the socket
    f = fake.file("app.log", b"...")              # a file object for `files=[f]` in post()

    await fake.until(lambda f: len(f.posts) == 2)

This module holds the server and the Web API's core (auth, posting, users.info); the
rest are mixins, each documented in its module: events out over Socket Mode or HTTP,
with redelivery and `expire()` (`slack_events.py`), files (`slack_files.py`), history
(`slack_history.py`), members (`slack_members.py`), button clicks
(`slack_interactive.py`), slash commands and App Home (`slack_commands.py`), and the
live surfaces: status lines, streams, reactions (`slack_streams.py`).

    fake.lose_answers = 1          # the next chat.postMessage is posted, its answer cut
    fake.remove_bot("C2")          # history calls there answer not_in_channel
    fake.delete("C1", ts)          # gone from history
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from tests.fakes.kept import Kept, bound
from tests.fakes.slack_commands import CommandsApi
from tests.fakes.slack_events import Envelope as Envelope
from tests.fakes.slack_events import EventsApi
from tests.fakes.slack_events import deliver_http as deliver_http
from tests.fakes.slack_files import FilesApi
from tests.fakes.slack_history import HistoryApi
from tests.fakes.slack_ids import APP_ID, BOT_ID, BOT_USER, TEAM
from tests.fakes.slack_interactive import InteractiveApi
from tests.fakes.slack_members import MembersApi
from tests.fakes.slack_streams import StreamsApi
from tests.fakes.threaded import ThreadedServer


@dataclass
class ApiCall:
    method: str
    params: dict[str, Any]
    token: str
    at: float = field(default_factory=time.monotonic)


@dataclass
class Failure:
    status: int
    error: str
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack(
    EventsApi,
    HistoryApi,
    MembersApi,
    FilesApi,
    InteractiveApi,
    CommandsApi,
    StreamsApi,
    ThreadedServer["FakeSlack"],
):
    name = "fake Slack"

    def __init__(self, scopes: str = "chat:write,app_mentions:read,im:history") -> None:
        super().__init__()
        self.scopes = scopes
        self.calls: Kept[ApiCall] = Kept()
        self.counted: Counter[str] = Counter()  # API calls by method, every one
        self.posts: Kept[dict[str, Any]] = Kept()
        self.updates: Kept[dict[str, Any]] = Kept()  # chat.update calls
        self.ephemerals: Kept[dict[str, Any]] = Kept()  # chat.postEphemeral calls
        self.home_views: dict[str, dict[str, Any]] = {}  # views.publish: user id -> view
        self._failures: dict[str, list[Failure]] = {}
        self.hosted: dict[str, tuple[bytes, str]] = {}  # file id -> bytes, mimetype
        self.downloads: Kept[tuple[str, str]] = Kept()  # (file id, bearer token) per GET
        self.download_failures: dict[str, list[int]] = {}
        self.gated: set[str] = set()  # file ids whose downloads hang until `downloads_open`
        self.downloads_open = threading.Event()
        self.uploads: Kept[dict[str, Any]] = Kept()  # completed uploads: files, channel, thread
        self.pending_uploads: dict[str, dict[str, Any]] = {}  # file id -> name, bytes
        self.fail_after_complete = 0  # completes to do, then answer 500 (the answer is lost)
        self.completes_open = threading.Event()  # cleared: completeUpload shares, answers later
        self.completes_open.set()
        self._file_ids = itertools.count(1)
        self._last_ts = 0.0
        self._ts_lock = threading.Lock()
        self.history: dict[str, list[dict[str, Any]]] = {}  # channel -> messages, oldest first
        self.removed: set[str] = set()  # channels the bot was removed from
        self.lose_answers = 0  # chat.postMessage calls to post, then cut instead of answering
        self.users: dict[str, dict[str, str]] = {}  # user id -> {"name", "email"} (users.info)
        self.members: dict[str, list[str]] = {}  # channel -> members (conversations.members)
        #: None: every record keeps every row, as tests read them; a long soak sets it
        #: with `bound` (tests/fakes/kept.py)
        self.keep: int | None = None
        self._init_events()  # envelopes, sockets, HTTP delivery (slack_events.py)
        self._init_streams()  # status lines, sessions, reactions, streams (slack_streams.py)

    def bound(self, keep: int) -> None:
        """Keep about the newest `keep` rows of each record, the acked envelopes too, and
        of each channel's history its newest `keep // 100` (at least 100)."""
        self.keep = keep
        records = [self.calls, self.posts, self.updates, self.ephemerals, self.downloads]
        records += [self.uploads, self.statuses, self.sessions, self.reactions]
        bound(keep, *records, self.http_statuses)

    # -- addresses -------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def env(self, mode: str = "socket") -> dict[str, str]:
        env = {"SLACK_BOT_TOKEN": "xoxb-fake", "SLACK_API_URL": self.api_url}
        if mode == "socket":
            env["SLACK_APP_TOKEN"] = "xapp-fake"
        else:
            env["SLACK_SIGNING_SECRET"] = self.signing_secret
        return env

    # -- the server (see ThreadedServer) ---------------------------------------------
    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # read methods take GET too
        app.router.add_get("/ws", self._socket)
        app.router.add_get("/files-pri/{id}/{name}", self._download)
        app.router.add_post("/upload/{id}", self._upload_bytes)

    async def _closing(self) -> None:
        for ws in list(self._sockets):
            await ws.close()

    def _watched(self) -> FakeSlack:
        return self

    def _progress(self) -> str:
        return "posts: " + json.dumps([p.get("text") for p in self.posts])[:2000]

    # -- scripting (from any thread) --------------------------------------------------
    def fail(
        self, method: str, status: int = 429, error: str = "ratelimited", retry_after: int = 1
    ) -> None:
        """The next call of `method` fails (429 carries `Retry-After`)."""
        headers = {"Retry-After": str(retry_after)} if status == 429 else {}
        self._failures.setdefault(method, []).append(Failure(status, error, headers))

    def post(
        self,
        text: str,
        user: str = "UANN",
        channel: str = "C1",
        thread_ts: str | None = None,
        channel_type: str = "channel",
        **extra: Any,
    ) -> str:
        """A person posts: the `message` event, and `app_mention` too if it names the bot."""
        ts = self.next_ts()
        event = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts}
        event.update(channel_type=channel_type, event_ts=ts, team=TEAM, **extra)
        if thread_ts:
            event["thread_ts"] = thread_ts
        self.remember({k: v for k, v in event.items() if k not in ("channel_type", "event_ts")})
        events = [event]
        if f"<@{BOT_USER}>" in text and channel_type != "im":
            mention = {k: v for k, v in event.items() if k != "channel_type"}
            events.insert(0, {**mention, "type": "app_mention"})
        for e in events:
            self.send_event(e)
        return ts

    def next_ts(self) -> str:
        """Slack's ts: the post's time in seconds, microseconds after the dot, unique."""
        with self._ts_lock:
            self._last_ts = max(time.time(), self._last_ts + 0.000001)
            return f"{self._last_ts:.6f}"

    def remember(self, message: dict[str, Any]) -> None:
        """Keep a message in its channel's history (oldest first)."""
        with self._changed:
            rows = self.history.setdefault(str(message["channel"]), [])
            rows.append(message)
            if self.keep is not None and len(rows) > 2 * (kept := max(self.keep // 100, 100)):
                del rows[:-kept]

    def delete(self, channel: str, ts: str) -> None:
        """A person deletes a message (the bot is not told: nothing is delivered)."""
        with self._changed:
            kept = [m for m in self.history.get(channel, []) if m["ts"] != ts]
            self.history[channel] = kept

    def remove_bot(self, channel: str) -> None:
        self.removed.add(channel)

    # -- reading (from any thread) ----------------------------------------------------
    def method_calls(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    # -- the Web API ------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.calls.append(ApiCall(method, params, token or str(params.get("token", ""))))
        self.counted[method] += 1
        self._notify()
        failures = self._failures.get(method)
        if failures:
            f = failures.pop(0)
            body = {"ok": False, "error": f.error}
            return web.json_response(body, status=f.status, headers=f.headers)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        try:
            answer, headers = await handler(params, token)
        except _CutConnection:
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)  # never reaches the client
        return web.json_response(answer, headers=headers)

    async def _auth_test(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        if not token.startswith("xoxb-"):
            return {"ok": False, "error": "invalid_auth"}, {}
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake Team",
            "user": "switchboard",
            "team_id": TEAM,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
        }, {"X-OAuth-Scopes": self.scopes}

    async def _apps_connections_open(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        if not token.startswith("xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}, {}
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/ws?n={self.connections}"}, {}

    async def _chat_postMessage(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        channel = str(params.get("channel", ""))
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}, {}
        if not channel or channel.startswith("CGONE"):
            return {"ok": False, "error": "channel_not_found"}, {}
        if channel.startswith("U"):  # a user id posts in the DM with the app
            channel = "D" + channel[1:]
        message = {**params, "channel": channel, "ts": self.next_ts()}
        if isinstance(message.get("metadata"), str):  # form-encoded: a JSON string
            message["metadata"] = json.loads(message["metadata"])
        stored = {
            "type": "message",
            "channel": channel,
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "team": TEAM,
            "text": message["text"],
            "ts": message["ts"],
        }
        for key in ("thread_ts", "metadata", "username"):
            if message.get(key):
                stored[key] = message[key]
        self.remember(stored)
        self.sent_in(channel, message.get("thread_ts"))
        self.posts.append(message)
        self._notify()
        await self._echo(message)
        if self.lose_answers > 0:  # posted; the bot never hears so
            self.lose_answers -= 1
            raise _CutConnection
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}, {}

    async def _users_info(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        """As Slack answers: `missing_scope` without users:read; the profile's email only
        with users:read.email."""
        scopes = set(self.scopes.split(","))
        if "users:read" not in scopes:
            return {"ok": False, "error": "missing_scope", "needed": "users:read"}, {}
        user = self.users.get(str(params.get("user", "")))
        if user is None:
            return {"ok": False, "error": "user_not_found"}, {}
        profile = {"real_name": user["name"], "display_name": user["name"]}
        if "users:read.email" in scopes and user.get("email"):
            profile["email"] = user["email"]
        uid = str(params["user"])
        body = {"id": uid, "team_id": TEAM, "name": user["name"].lower(), "profile": profile}
        return {"ok": True, "user": body}, {}


class _CutConnection(Exception):
    """The handler did its work; the connection is cut before the answer."""


async def _params(request: web.Request) -> dict[str, Any]:
    query = dict(request.query)
    raw = await request.text()
    if not raw:
        return query  # tolerate an empty body (auth.test); GET carries the query only
    if request.content_type == "application/json":
        data = json.loads(raw)
        return {**query, **data} if isinstance(data, dict) else query
    return {**query, **dict(parse_qsl(raw))}
