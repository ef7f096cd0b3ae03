"""A fake Discord on 127.0.0.1: the REST API and the gateway websocket, in one server.

It runs in its own thread with its own event loop (a `ThreadedServer`), so it
serves a bot in the test's loop or a `switchboard run` subprocess alike. The real
discord.py talks to it: point `DISCORD_API_URL` at `fake.api_url` and
`DISCORD_GATEWAY_URL` at `fake.gateway_url`.

What it does, as Discord does: JSON with `Content-Type: application/json` exactly;
HELLO, heartbeat ACKs, IDENTIFY -> READY + GUILD_CREATE, RESUME -> the missed events
then RESUMED; every message the bot posts comes back as MESSAGE_CREATE; a thread
started from a message has the message's id and is announced with THREAD_CREATE;
messages over 2,000 characters, empty ones, unknown channels and unknown messages
get Discord's error codes; scripted 429s carry `retry_after`, `Retry-After` and `Via`.

This module holds the server, the gateway and the reads; the rest are mixins, each
documented in its module: message posts and threads started from them
(`discord_posts.py`), history (`discord_history.py`), members (`discord_members.py`),
button clicks and edits (`discord_interactive.py`), threads going quiet
(`discord_archive.py`), rate-limit headers and buckets (`discord_limits.py`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any
from urllib.parse import quote

from aiohttp import WSMsgType, web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_archive import ArchiveApi
from tests.fakes.discord_history import HistoryApi
from tests.fakes.discord_interactive import InteractiveApi
from tests.fakes.discord_limits import LimitsApi
from tests.fakes.discord_members import MembersApi
from tests.fakes.discord_posts import Post, PostsApi
from tests.fakes.discord_server import GatewaySession, json_response
from tests.fakes.kept import Kept, bound, newest
from tests.fakes.threaded import ThreadedServer

TOKEN = "fake-discord-token"
_MENTION = re.compile(r"<@!?(\d+)>")


class FakeDiscord(
    PostsApi,
    HistoryApi,
    MembersApi,
    InteractiveApi,
    ArchiveApi,
    LimitsApi,
    ThreadedServer[list[Post]],
):
    name = "fake Discord"
    client_max_size = 64 * 1024 * 1024  # uploads: Discord answers 413 itself past its limit

    def __init__(self) -> None:
        super().__init__()
        self.channels: dict[str, p.Payload] = {
            str(p.GENERAL): p.text_channel(p.GENERAL, "general"),
            str(p.RANDOM): p.text_channel(p.RANDOM, "random"),
        }
        self.messages: dict[str, p.Payload] = {}
        self.nonces: dict[str, str] = {}  # enforced nonce -> the message it created
        self.lose_answers = 0  # posts to create, then cut the connection instead of answering
        self.posts: Kept[Post] = Kept()
        self.requests: Kept[tuple[str, str]] = Kept()
        self.threads_started: Kept[str] = Kept()
        self.sent_at: dict[str, float] = {}  # message id -> time.time() its MESSAGE_CREATE left
        self.failures: list[tuple[int, p.Payload, dict[str, str]]] = []
        self.fail_after = 0  # successful posts before the scripted failures begin
        self.thread_failures: list[tuple[int, int]] = []
        self.gateway = GatewaySession(TOKEN, self._ready_payloads)
        #: HELLO's heartbeat interval (Discord's own: 41,250 ms; its ACKs answer at once)
        self.heartbeat_ms = 41_250
        self.hosted: dict[str, bytes] = {}  # attachment id -> bytes, served at its url
        self.downloads: Kept[tuple[str, str | None]] = Kept()  # (attachment id, Authorization)
        self.uploads: Kept[tuple[str, str, bytes]] = Kept()  # (message id, filename, bytes) posted
        self.forbidden: set[str] = set()  # channels the bot lost access to (403 on history)
        self.history_calls = 0
        self.history_waiting = 0  # history requests held by `hold_history`
        self._history_free_for = -1  # -1: not held; n: answer n more, then hold
        self._history_gate: asyncio.Event | None = None
        #: interaction token -> {"sent_at", "responses"} (button clicks and their answers)
        self.interactions: dict[str, dict[str, Any]] = {}
        self.app_commands: list[p.Payload] = []  # the global commands the app registered
        self.edits: Kept[str] = Kept()  # ids of messages edited (PATCH)
        self.edit_failures: list[tuple[int, p.Payload, dict[str, str]]] = []  # next PATCHes
        self.typing: Kept[tuple[str, float]] = Kept()  # (channel id, monotonic time) per typing
        #: None: every record keeps every row, as tests read them; a long soak sets it
        #: with `bound` (tests/fakes/kept.py)
        self.keep: int | None = None
        self._init_archive()
        self._init_limits()

    def bound(self, keep: int) -> None:
        """Keep about the newest `keep` rows of each record: messages, posts, requests,
        the gateway's frames for RESUME, and the rest."""
        self.keep = self.gateway.keep = keep
        records = [self.posts, self.requests, self.threads_started, self.downloads]
        bound(keep, *records, self.uploads, self.edits, self.typing, self.archived)

    def _store(self, data: p.Payload) -> None:
        self.messages[str(data["id"])] = data
        if self.keep is not None:
            self.messages = newest(self.messages, self.keep)
            self.sent_at = newest(self.sent_at, self.keep)
            self.nonces = newest(self.nonces, self.keep)

    # -- addresses and settings ------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gw/"

    def env(self) -> dict[str, str]:
        return {
            "DISCORD_BOT_TOKEN": TOKEN,
            "DISCORD_API_URL": self.api_url,
            "DISCORD_GATEWAY_URL": self.gateway_url,
        }

    # -- the server (see ThreadedServer) ---------------------------------------------
    def _routes(self, app: web.Application) -> None:
        app.middlewares.append(self._rate_limits)
        app.router.add_get("/gw/", self._gateway)
        api = "/api/v10"
        app.router.add_get(f"{api}/users/@me", self._me)
        app.router.add_get(f"{api}/oauth2/applications/@me", self._application)
        app.router.add_post(f"{api}/channels/{{cid}}/messages", self._post_message)
        app.router.add_get(f"{api}/channels/{{cid}}/messages", self._history)
        app.router.add_post(f"{api}/channels/{{cid}}/messages/{{mid}}/threads", self._thread_from)
        app.router.add_get(f"{api}/channels/{{cid}}", self._get_channel)
        app.router.add_get(f"{api}/guilds/{{gid}}/members/{{uid}}", self._get_member)
        app.router.add_get("/attachments/{aid}/{name}", self._attachment)
        app.router.add_post(
            f"{api}/interactions/{{iid}}/{{token}}/callback", self._interaction_callback
        )
        app.router.add_patch(f"{api}/channels/{{cid}}/messages/{{mid}}", self._edit_message)
        app.router.add_put(f"{api}/applications/{{app}}/commands", self._put_commands)
        app.router.add_post(f"{api}/channels/{{cid}}/typing", self._typing)

    async def _startup(self) -> None:
        await super()._startup()
        self._start_archiver()

    async def _closing(self) -> None:
        await self._stop_archiver()
        await self.gateway.close()

    def _watched(self) -> list[Post]:
        return self.posts

    def _progress(self) -> str:
        return "posts: " + json.dumps([(x.channel_id, x.content[:80]) for x in self.posts])

    # -- what a test does (from any thread) ------------------------------------------
    def say(
        self,
        content: str,
        *,
        author: int = p.ANN,
        channel: str | int = p.GENERAL,
        reference: str | None = None,
        attachments: list[p.Payload] | None = None,
        kind: int = 0,
    ) -> str:
        """A person (or bot) posts `content`: MESSAGE_CREATE goes out; returns its id."""
        chan = self.channels[str(channel)]
        mentions = [int(u) for u in _MENTION.findall(content) if int(u) in p.USERS]
        data = p.message(
            p.snowflake(),
            chan,
            author,
            content,
            mentions=mentions,
            reference=int(reference) if reference else None,
            attachments=attachments,
            kind=kind,
        )
        self._call(self._store_and_dispatch(data))
        return str(data["id"])

    def attachment(self, name: str, data: bytes, content_type: str = "text/plain") -> p.Payload:
        """Host `data` as Discord's CDN would and return the attachment object for `say`."""
        aid = str(p.snowflake())
        self.hosted[aid] = data
        url = f"http://127.0.0.1:{self.port}/attachments/{aid}/{quote(name or 'file', safe='')}"
        return {
            "id": aid,
            "filename": name,
            "size": len(data),
            "url": url + "?ex=1&is=1&hm=signed",
            "proxy_url": url,
            "content_type": content_type,
        }

    def burst(self, messages: list[tuple[str, str]], author: int = p.ANN) -> list[str]:
        """Dispatch many (content, channel) messages back to back; returns their ids."""
        payloads = [
            p.message(p.snowflake(), self.channels[chan], author, content, mentions=[p.BOT_ID])
            for content, chan in messages
        ]

        async def send_all() -> None:
            for data in payloads:
                await self._store_and_dispatch(data)

        self._call(send_all(), timeout=120)
        return [str(data["id"]) for data in payloads]

    def add_threads(self, count: int, parent: int = p.GENERAL) -> list[str]:
        """Threads people started before the bot connected (listed in GUILD_CREATE)."""
        ids = [str(p.snowflake()) for _ in range(count)]
        for tid in ids:
            self.channels[tid] = p.thread(int(tid), parent, f"topic {tid}", p.ANN)
            self._active_since_now(tid)
        return ids

    def resend(self, message_id: str) -> None:
        """Dispatch the same MESSAGE_CREATE again (Discord can deliver an event twice)."""
        self._call(self.gateway.dispatch("MESSAGE_CREATE", self.messages[message_id]))

    def open_dm(self, user: int = p.ANN) -> str:
        cid = str(p.snowflake())
        self.channels[cid] = p.dm_channel(int(cid), user)
        return cid

    def thread(self, name: str = "a thread", parent: int = p.GENERAL, owner: int = p.ANN) -> str:
        """A thread people started (not the bot), announced with THREAD_CREATE."""
        tid = p.snowflake()
        data = p.thread(tid, parent, name, owner)
        self.channels[str(tid)] = data
        self._active_since_now(str(tid))
        self._call(self.gateway.dispatch("THREAD_CREATE", {**data, "newly_created": True}))
        return str(tid)

    def drop(self, hold: bool = False) -> None:
        """Cut the gateway socket; with `hold`, a RESUME waits until `release()`."""
        self._call(self.gateway.drop(hold))

    def expire_session(self) -> None:
        """The session can no longer resume: the next RESUME gets INVALID_SESSION."""
        self.gateway.session_id = "expired"

    def release(self) -> None:
        self._call(self.gateway.release())

    def delete(self, message_id: str) -> None:
        """A person deletes a message (no event reaches a bot that is away)."""
        with self._changed:
            self.messages.pop(message_id, None)

    def forbid(self, channel_id: str) -> None:
        """The bot loses access to a channel: its history answers 403 Missing Access."""
        self.forbidden.add(str(channel_id))

    def in_channel(self, channel_id: str) -> list[Post]:
        return [post for post in self.posts if post.channel_id == str(channel_id)]

    async def wait_ready(self, timeout: float = 10.0) -> None:
        await asyncio.to_thread(self.gateway.wait_identified, timeout)

    # -- the gateway ---------------------------------------------------------------------
    def _ready_payloads(self) -> tuple[p.Payload, p.Payload]:
        ready = {
            "v": 10,
            "user": p.USERS[p.BOT_ID],
            "guilds": [{"id": str(p.GUILD_ID), "unavailable": True}],
            "session_id": uuid.uuid4().hex,
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(p.BOT_ID), "flags": 0},
            "private_channels": [],
            "relationships": [],
        }
        chans = [c for c in self.channels.values() if c["type"] == p.TEXT]
        threads = [  # as Discord: the active threads only
            c
            for c in self.channels.values()
            if c["type"] == p.PUBLIC_THREAD and not c["thread_metadata"]["archived"]
        ]
        return ready, p.guild(chans, threads)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        conn = self.gateway.connected(ws, request.transport)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}}))
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                break
            await self.gateway.received(conn, json.loads(msg.data))
        self.gateway.disconnected(conn)
        return ws

    async def _store_and_dispatch(self, data: p.Payload) -> None:
        self._store(data)
        chan = self.channels.get(str(data["channel_id"]))
        if chan is not None:  # as Discord's channel objects (GUILD_CREATE) carry it
            chan["last_message_id"] = str(data["id"])
            await self._wake(chan)
        await self.gateway.dispatch("MESSAGE_CREATE", data)
        self.sent_at[str(data["id"])] = time.time()  # wall clock: comparable across processes

    # -- REST ---------------------------------------------------------------------------
    def _seen(self, request: web.Request) -> bool:
        self.requests.append((request.method, request.path))
        return request.headers.get("Authorization") == f"Bot {TOKEN}"

    async def _me(self, request: web.Request) -> web.Response:
        if not self._seen(request):
            return json_response({"message": "401: Unauthorized", "code": 0}, 401)
        return json_response(p.USERS[p.BOT_ID])

    async def _attachment(self, request: web.Request) -> web.Response:
        aid = request.match_info["aid"]
        self.downloads.append((aid, request.headers.get("Authorization")))
        self._notify()
        if aid not in self.hosted:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=self.hosted[aid], content_type="application/octet-stream")

    async def _application(self, request: web.Request) -> web.Response:
        self._seen(request)
        return json_response(p.application())

    async def _get_channel(self, request: web.Request) -> web.Response:
        self._seen(request)
        chan = self.channels.get(request.match_info["cid"])
        if chan is None:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        return json_response(chan)

    async def _typing(self, request: web.Request) -> web.Response:
        """POST /channels/{id}/typing: "is typing" for about 10 s, or until the bot posts."""
        self._seen(request)
        cid = request.match_info["cid"]
        if cid not in self.channels:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        self.typing.append((cid, time.monotonic()))
        self._notify()
        return web.Response(status=204)
