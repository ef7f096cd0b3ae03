"""The fake Discord's message writes (a mixin of `FakeDiscord`), as Discord answers them.

POST /channels/{id}/messages: the message is created and comes back as MESSAGE_CREATE;
files become attachments hosted at their url; an empty message, more than 10 files or
10 MiB, content over 2,000 characters and a reply to an unknown message get 400 (code
50035), an unknown channel 404 (10003); with `enforce_nonce` a repeated nonce answers
the message it already created. Each post is recorded as a `Post`. POST
/channels/{id}/messages/{mid}/threads starts a thread with the message's id, announced
with THREAD_CREATE (400 50024 outside a text channel, 160004 if it exists already).

    fake.fail_posts(429, retry_after=0.5)   # the next POST is rate-limited
    fake.fail_threads(403, 50001)           # the next thread creation is refused
    fake.lose_answers = 1                   # the next post is created, its answer cut
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import GatewaySession, json_response, message_body
from tests.fakes.kept import Kept


@dataclass
class Post:
    """A message the bot posted over REST."""

    id: str
    channel_id: str
    content: str
    reference: str | None
    at: float = field(default_factory=time.monotonic)
    files: list[str] = field(default_factory=list)  # names of the files it carried


class PostsApi:
    channels: dict[str, p.Payload]
    messages: dict[str, p.Payload]
    nonces: dict[str, str]
    lose_answers: int
    posts: Kept[Post]
    uploads: Kept[tuple[str, str, bytes]]
    threads_started: Kept[str]
    failures: list[tuple[int, p.Payload, dict[str, str]]]
    fail_after: int
    thread_failures: list[tuple[int, int]]
    gateway: GatewaySession
    _changed: threading.Condition  # ThreadedServer's
    _store: Callable[[p.Payload], None]

    def fail_posts(
        self,
        status: int,
        times: int = 1,
        retry_after: float = 0.0,
        code: int = 0,
        after: int = 0,
        edge: bool = False,
    ) -> None:
        """After `after` more successful posts, `times` POSTs of a message get HTTP `status`.

        A 429 comes from Discord's API (with `Via`, which discord.py waits out itself),
        or with `edge` from the proxy in front of it (no `Via`: discord.py gives up).
        """
        self.fail_after = after
        body: p.Payload = {"message": "scripted failure", "code": code}
        headers: dict[str, str] = {}
        if status == 429:
            body = {"message": "You are being rate limited.", "retry_after": retry_after}
            body.update({"global": False, "code": 0})
            headers = {
                "Retry-After": str(max(1, round(retry_after))),
                "X-RateLimit-Scope": "user",
            }
            if not edge:
                headers["Via"] = "1.1 google"
        self.failures.extend([(status, body, headers)] * times)

    def fail_threads(self, status: int, code: int, times: int = 1) -> None:
        """The next `times` thread creations get HTTP `status` with Discord error `code`."""
        self.thread_failures.extend([(status, code)] * times)

    async def _post_message(self, request: web.Request) -> web.Response:
        self._seen(request)
        # read first: an unread body makes aiohttp drop keep-alive
        body, files = await message_body(request)
        if self.failures and self.fail_after == 0:
            status, body, headers = self.failures.pop(0)
            return json_response(body, status, headers)
        chan = self.channels.get(request.match_info["cid"])
        if chan is None:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        problem = self._invalid(body, files)
        if problem:
            return json_response({"message": problem, "code": 50035}, 400)
        await self._wake(chan)  # an archived thread opens again, unless it is locked
        if (refused := self._refuse_if_archived(chan["id"])) is not None:
            return refused
        nonce = str(body["nonce"]) if body.get("enforce_nonce") and body.get("nonce") else None
        if nonce in self.nonces:  # Discord: the message this nonce already created
            return json_response(self.messages[self.nonces[nonce]])
        ref = (body.get("message_reference") or {}).get("message_id")
        ref = str(ref) if ref else None  # Discord takes snowflakes as numbers or strings
        data = p.message(p.snowflake(), chan, p.BOT_ID, body.get("content") or "")
        data["attachments"] = [self._hosted(name, blob) for name, blob in files]
        data["components"] = body.get("components") or []
        if nonce is not None:
            self.nonces[nonce] = str(data["id"])
        if ref:
            data["message_reference"] = {"message_id": str(ref), "channel_id": chan["id"]}
        self._store(data)
        self.fail_after = max(0, self.fail_after - 1)
        with self._changed:
            names = [name for name, _ in files]
            self.posts.append(Post(str(data["id"]), chan["id"], data["content"], ref, files=names))
            self.uploads.extend((str(data["id"]), name, blob) for name, blob in files)
            self._changed.notify_all()
        await self.gateway.dispatch("MESSAGE_CREATE", data)
        if self.lose_answers > 0:  # the message exists; the bot never hears so
            self.lose_answers -= 1
            assert request.transport is not None
            request.transport.abort()
        return json_response(data)

    def _hosted(self, name: str, blob: bytes) -> p.Payload:
        return self.attachment(name, blob, "application/octet-stream")

    def _invalid(self, body: p.Payload, files: list[tuple[str, bytes]]) -> str | None:
        content = body.get("content") or ""
        if not content.strip() and not files:
            return "Cannot send an empty message"
        if len(files) > 10:
            return "Invalid Form Body: files: Must be 10 or fewer in length."
        if sum(len(blob) for _, blob in files) > 10 * 1024 * 1024:
            return "Request entity too large"
        if len(content) > 2000:
            return "Invalid Form Body: content: Must be 2000 or fewer in length."
        ref = (body.get("message_reference") or {}).get("message_id")
        if ref and str(ref) not in self.messages:
            return "Invalid Form Body: message_reference: Unknown message"
        return None

    async def _thread_from(self, request: web.Request) -> web.Response:
        self._seen(request)
        cid, mid = request.match_info["cid"], request.match_info["mid"]
        body = await request.json()
        if self.thread_failures:
            status, code = self.thread_failures.pop(0)
            return json_response({"message": "scripted failure", "code": code}, status)
        chan = self.channels.get(cid)
        if chan is None:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        if chan["type"] != p.TEXT:
            return json_response(
                {"message": "Cannot execute action on this channel type", "code": 50024}, 400
            )
        msg = self.messages.get(mid)
        if msg is None or msg["channel_id"] != cid:
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        if mid in self.channels:
            return json_response(
                {"message": "A thread has already been created for this message", "code": 160004},
                400,
            )
        data = p.thread(int(mid), int(cid), str(body.get("name") or "thread")[:100], p.BOT_ID)
        self.channels[mid] = data
        self._active_since_now(mid)
        self.threads_started.append(mid)
        await self.gateway.dispatch("THREAD_CREATE", {**data, "newly_created": True})
        return json_response(data, 201)
