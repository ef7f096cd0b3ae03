"""A small local Slack for `switchboard eval`: the Web API methods the Slack channel
calls and a Socket Mode websocket, on 127.0.0.1, in the evaluation's own event loop.

It speaks the wire as Slack documents it, so the real slack-sdk and slack-bolt in
`channels/slack` run unchanged against it: `auth.test` (with `X-OAuth-Scopes`),
`apps.connections.open` then a websocket that says `hello` and sends `events_api`
envelopes (acked by `envelope_id`), `chat.postMessage` (the bot's own post comes back
as a `message` event carrying its `bot_id`), `chat.update`, `conversations.history`
(top-level messages, newest first) and `conversations.replies` (the parent, then the
replies), `conversations.members`, `users.info`. A post that mentions the bot arrives
twice, as `app_mention` and `message`, as it does from a real workspace. Live-progress
surfaces (status lines, reactions) answer ok and are otherwise ignored. The scripted
person posts with `post`; what the bot posted is in `posts`.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from pydantic import SecretStr

BOT_USER, BOT_ID, TEAM, APP_ID = "UEVALBOT", "BEVAL", "TEVAL", "AEVAL"
SCOPES = "chat:write,chat:write.customize,app_mentions:read,channels:history,users:read"
#: surfaces that only show progress: answered ok, nothing kept
QUIET_METHODS = frozenset(
    {"assistant.threads.setStatus", "reactions.add", "reactions.remove", "views.publish",
     "chat.postEphemeral", "agents.sessions.setStatus"}
)  # fmt: skip


class LocalSlack:
    """One workspace: a bot, people (`users`), channels and their messages."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users  # user id -> name
        self.posts: list[dict[str, Any]] = []  # the bot's posts, in order
        self.history: dict[str, list[dict[str, Any]]] = {}  # channel -> messages, oldest first
        self.port = 0
        self._sockets: list[web.WebSocketResponse] = []
        self._queue: list[dict[str, Any]] = []
        self._events = itertools.count(1)
        self._last_ts = 0.0
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------
    async def start(self, extra: list[web.RouteDef] | None = None) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/ws", self._socket)
        app.add_routes(extra or [])
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def connected(self) -> bool:
        return bool(self._sockets)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self) -> dict[str, Any]:
        """The settings that point the Slack channel here (Socket Mode)."""
        return {
            "slack_bot_token": SecretStr("xoxb-eval"),
            "slack_app_token": SecretStr("xapp-eval"),
            "slack_api_url": f"{self.url}/api/",
        }

    # -- the person's side -----------------------------------------------------------
    async def post(self, text: str, user: str, channel: str, thread_ts: str | None = None) -> str:
        """A person posts; returns the message's ts."""
        ts = self._next_ts()
        message = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self._remember(message)
        event = {**message, "channel_type": "channel", "event_ts": ts, "team": TEAM}
        if f"<@{BOT_USER}>" in text:
            await self._send({**message, "type": "app_mention", "event_ts": ts})
        await self._send(event)
        return ts

    def in_thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        return [
            p for p in self.posts if p["channel"] == channel and p.get("thread_ts") == thread_ts
        ]

    # -- Socket Mode -----------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        self._sockets.append(ws)
        queued, self._queue = self._queue, []
        for envelope in queued:
            await ws.send_str(json.dumps(envelope))
        try:
            async for _frame in ws:  # acks: nothing is redelivered here
                pass
        finally:
            self._sockets.remove(ws)
        return ws

    async def _send(self, event: dict[str, Any]) -> None:
        envelope = {
            "type": "events_api",
            "envelope_id": str(uuid.uuid4()),
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": {
                "token": "eval",
                "team_id": TEAM,
                "api_app_id": APP_ID,
                "event": event,
                "type": "event_callback",
                "event_id": f"Ev{next(self._events):08d}",
                "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
            },
        }
        if not self._sockets:
            self._queue.append(envelope)
            return
        await self._sockets[-1].send_str(json.dumps(envelope))

    # -- the Web API -----------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if method in QUIET_METHODS:
            return web.json_response({"ok": True})
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        headers = {"X-OAuth-Scopes": SCOPES} if method == "auth.test" else {}
        return web.json_response(await handler(params, token), headers=headers)

    async def _auth_test(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        if not token.startswith("xoxb-"):
            return {"ok": False, "error": "invalid_auth"}
        return {"ok": True, "url": "https://eval.slack.test/", "team": "Eval",
                "user": "switchboard", "team_id": TEAM, "user_id": BOT_USER,
                "bot_id": BOT_ID}  # fmt: skip

    async def _apps_connections_open(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        if not token.startswith("xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/ws"}

    async def _chat_postMessage(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if isinstance(params.get("metadata"), str):  # form-encoded: a JSON string
            params["metadata"] = json.loads(params["metadata"])
        post = {**params, "channel": channel, "ts": self._next_ts()}
        stored = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "app_id": APP_ID,
                  "team": TEAM, "channel": channel, "text": str(post.get("text", "")),
                  "ts": post["ts"]}  # fmt: skip
        for key in ("thread_ts", "metadata", "username"):
            if post.get(key):
                stored[key] = post[key]
        self._remember(stored)
        self.posts.append(post)
        await self._send(stored)  # the bot hears its own post, as from Slack
        return {"ok": True, "channel": channel, "ts": post["ts"], "message": stored}

    async def _chat_update(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        for post in self.posts:
            if post["ts"] == params.get("ts") and post["channel"] == params.get("channel"):
                post["text"] = params.get("text", post.get("text"))
                return {"ok": True, "channel": post["channel"], "ts": post["ts"]}
        return {"ok": False, "error": "message_not_found"}

    async def _users_info(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        uid = str(params.get("user", ""))
        if uid not in self.users:
            return {"ok": False, "error": "user_not_found"}
        name = self.users[uid]
        profile = {"real_name": name, "display_name": name}
        return {"ok": True, "user": {"id": uid, "team_id": TEAM, "name": name.lower(),
                                     "profile": profile}}  # fmt: skip

    async def _conversations_members(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        members = [BOT_USER, *self.users]
        return {"ok": True, "members": members, "response_metadata": {"next_cursor": ""}}

    async def _conversations_history(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        messages = self.history.get(str(params.get("channel", "")), [])
        top = [m for m in messages if m.get("thread_ts") in (None, m["ts"])]
        return _page(list(reversed(_window(top, params))))

    async def _conversations_replies(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        messages = self.history.get(str(params.get("channel", "")), [])
        root = str(params.get("ts", ""))
        parent = [m for m in messages if m["ts"] == root]
        if not parent:
            return {"ok": False, "error": "thread_not_found"}
        replies = [m for m in messages if m.get("thread_ts") == root and m["ts"] != root]
        return _page(parent + _window(replies, params))

    # -- bookkeeping -----------------------------------------------------------------
    def _next_ts(self) -> str:
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    def _remember(self, message: dict[str, Any]) -> None:
        self.history.setdefault(str(message["channel"]), []).append(message)


def _window(messages: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages after `oldest` and before `latest` (both exclusive, as Slack's default)."""
    oldest = float(params.get("oldest") or 0)
    latest = float(params.get("latest") or "inf")
    return [m for m in messages if oldest < float(m["ts"]) < latest]


def _page(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One page holds everything: an evaluation's channels are short."""
    shown = [{k: v for k, v in m.items() if k != "channel"} for m in messages]
    return {"ok": True, "messages": shown, "has_more": False,
            "response_metadata": {"next_cursor": ""}}  # fmt: skip


async def _params(request: web.Request) -> dict[str, Any]:
    query = dict(request.query)
    raw = await request.text()
    if not raw:
        return query
    if request.content_type == "application/json":
        data = json.loads(raw)
        return {**query, **data} if isinstance(data, dict) else query
    return {**query, **dict(parse_qsl(raw))}
