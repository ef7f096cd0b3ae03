"""The fake Slack's events out (a mixin of `FakeSlack`): Socket Mode or HTTP Events.

An event goes out as an envelope: over ONE of the open Socket Mode websockets, chosen
at random (Slack spreads an app's events over its connections, up to 10; `rng` is
seeded, so a chaos run replays), queued while none is open, acked by envelope id; or,
when `http_endpoint` is set, POSTed there signed as Slack signs it (`deliver_http`; the
200 is the ack). An envelope sent but not acked is redelivered (`retry_attempt` + 1, at
most `MAX_RETRIES`, as Slack does) on the next socket that opens, and, when the socket
it went out on closes, on another open one; with `retry_seconds` set, also when no ack
came in time (on another socket; the n-th retry `retry_seconds * 4**n` after the last
send, Slack's retries scaled down). `expire()` drops what Slack would have given up on
after its retry window. The bot's own posts come back as `message` events (`_echo`).
`drop()` closes every socket, as Slack does when it rotates connections; `silence()`
kills the network without a word until `revive()`.

    fake.send_event({"type": "app_home_opened", ...})   # one raw event
    fake.send_many(events, interval=0.1)                 # a burst
    fake.unacked()                                       # envelopes not acked yet
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from tests.fakes.kept import Kept
from tests.fakes.slack_ids import APP_ID, BOT_ID, BOT_USER, TEAM

if TYPE_CHECKING:
    from tests.fakes.slack_api import FakeSlack

MAX_RETRIES = 3  # Slack retries an unacked event 3 times (at once, after 1 and 5 minutes)
RETRY_BACKOFF = 4  # the next timed retry waits this many times longer


@dataclass
class Envelope:
    id: str
    body: dict[str, Any]
    sent_at: float | None = None
    acked_at: float | None = None
    retries: int = 0
    kind: str = "events_api"  # or "interactive" (a button click), "slash_commands"
    response: Any = None  # what the app answered with its ack (a slash command's reply)


class EventsApi:
    envelopes: dict[str, Envelope]
    keep: int | None
    connections: int
    http_endpoint: str | None
    signing_secret: str
    http_statuses: Kept[int]
    silent: bool
    rng: random.Random
    _sockets: list[web.WebSocketResponse]
    _queue: list[Envelope]
    _event_id: int

    def _init_events(self) -> None:
        self.envelopes = {}
        self.connections = 0
        self.http_endpoint = None  # HTTP Events mode: where events are POSTed
        self.signing_secret = "fake-signing-secret"
        self.http_statuses = Kept()
        self._sockets = []
        #: picks the socket of each event: `fake.rng.seed(n)` replays a run
        self.rng = random.Random(0)
        #: the socket each envelope last went out on (redelivered elsewhere if it closes)
        self._sent_on: dict[str, web.WebSocketResponse] = {}
        #: an envelope not acked this long after it went out is sent again (None: only
        #: when its socket closes or another opens)
        self.retry_seconds: float | None = None
        #: the network to Slack is cut without a word: open sockets stop answering
        #: pings (no close frame), new sockets are refused (`silence()` / `revive()`)
        self.silent = False
        self._queue = []
        self._event_id = 0

    # -- scripting (from any thread) --------------------------------------------------
    def send_event(self: FakeSlack, event: dict[str, Any]) -> Envelope:
        """Deliver one raw event (Socket Mode envelope, or HTTP when http_endpoint is set)."""
        return self._call(self._send(self.callback(event)))

    def send_many(
        self: FakeSlack, events: list[dict[str, Any]], interval: float = 0.0
    ) -> list[Envelope]:
        """A burst from the fake's loop: `interval` seconds apart (0: back to back)."""
        bodies = [self.callback(e) for e in events]
        timeout = 10 + interval * len(bodies)
        return self._call(self._send_all(bodies, interval), timeout)

    def callback(self: FakeSlack, event: dict[str, Any]) -> dict[str, Any]:
        return {
            "token": "verification-token",
            "team_id": TEAM,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{self._next_event_id():08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }

    def _next_event_id(self: FakeSlack) -> int:
        with self._ts_lock:
            self._event_id += 1
            return self._event_id

    def drop(self: FakeSlack) -> None:
        """Close every open socket, as Slack does when it rotates connections."""
        self._call(self._drop())

    def silence(self) -> None:
        """The socket dies silently (a NAT dropped it): no close frame, pings go
        unanswered, and reconnects are refused until `revive()`."""
        self.silent = True
        for ws in list(self._sockets):
            ws._autoping = False  # aiohttp answers pings inside receive() unless told not to

    def revive(self) -> None:
        self.silent = False

    def expire(self: FakeSlack) -> None:
        """Slack gives up on events it could not deliver (its retries span minutes)."""
        self._call(self._expire())

    async def _expire(self) -> None:
        self._queue.clear()
        for envelope in self.envelopes.values():
            if envelope.acked_at is None:
                envelope.retries = MAX_RETRIES

    # -- reading (from any thread) ----------------------------------------------------
    def unacked(self) -> list[Envelope]:
        return [e for e in self.envelopes.values() if e.acked_at is None]

    @property
    def open_sockets(self) -> int:
        return len(self._sockets)

    # -- events out ---------------------------------------------------------------------
    async def _echo(self: FakeSlack, message: dict[str, Any]) -> None:
        """A real workspace sends the bot's own post back as a `message` event."""
        event = {
            "type": "message",
            "channel": message["channel"],
            "text": message["text"],
            "ts": message["ts"],
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "user": BOT_USER,
            "channel_type": "im" if message["channel"].startswith("D") else "channel",
        }
        if message.get("username"):
            event.update(subtype="bot_message", username=message["username"])
        if message.get("thread_ts"):
            event["thread_ts"] = message["thread_ts"]
        asyncio.get_running_loop().create_task(self._send(self.callback(event)))

    async def _send_all(
        self: FakeSlack, bodies: list[dict[str, Any]], interval: float
    ) -> list[Envelope]:
        sent = []
        start = time.monotonic()
        for i, body in enumerate(bodies):
            if interval and (wait := start + i * interval - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            sent.append(await self._send(body))
        return sent

    async def _send(self: FakeSlack, body: dict[str, Any], kind: str = "events_api") -> Envelope:
        envelope = Envelope(uuid.uuid4().hex, body, kind=kind)
        self.envelopes[envelope.id] = envelope
        if self.keep is not None and len(self.envelopes) > 2 * self.keep:
            self._forget_acked(self.keep)
        if self.http_endpoint is not None:
            asyncio.get_running_loop().create_task(self._send_http(envelope))
        elif self._sockets:
            await self._transmit(self.rng.choice(self._sockets), envelope)
        else:
            self._queue.append(envelope)
        return envelope

    async def _transmit(self, ws: web.WebSocketResponse, envelope: Envelope) -> None:
        frame = {
            "envelope_id": envelope.id,
            "type": envelope.kind,
            "accepts_response_payload": envelope.kind != "events_api",
            "retry_attempt": envelope.retries,
            "retry_reason": "timeout" if envelope.retries else "",
            "payload": envelope.body,
        }
        envelope.sent_at = time.monotonic()
        self._sent_on[envelope.id] = ws
        if self.retry_seconds is not None:
            wait = self.retry_seconds * RETRY_BACKOFF**envelope.retries
            asyncio.get_running_loop().call_later(wait, self._retry, envelope, ws)
        await ws.send_str(json.dumps(frame))

    def _retry(self, envelope: Envelope, ws: web.WebSocketResponse) -> None:
        """No ack in time for what went out on `ws` (and not since): on another socket."""
        unanswered = envelope.acked_at is None and envelope.retries < MAX_RETRIES
        if not unanswered or self._sent_on.get(envelope.id) is not ws or self.silent:
            return
        others = [s for s in self._sockets if s is not ws] or self._sockets
        if others:
            envelope.retries += 1
            again = self._transmit(self.rng.choice(others), envelope)
            asyncio.get_running_loop().create_task(again)

    async def _send_http(self: FakeSlack, envelope: Envelope) -> None:
        assert self.http_endpoint is not None
        envelope.sent_at = time.monotonic()
        status, answer = await deliver_http(
            self.http_endpoint,
            envelope.body,
            self.signing_secret,
            form=envelope.kind == "interactive",
            fields=envelope.kind == "slash_commands",
        )
        self.http_statuses.append(status)
        if status == 200:
            envelope.acked_at = time.monotonic()
            envelope.response = json.loads(answer) if answer.startswith("{") else answer
        self._notify()

    async def _socket(self: FakeSlack, request: web.Request) -> web.StreamResponse:
        if self.silent:
            return web.Response(status=503, text="unreachable")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections += 1
        hello = {"type": "hello", "num_connections": 1, "connection_info": {"app_id": APP_ID}}
        await ws.send_str(json.dumps(hello))
        self._sockets.append(ws)
        self._notify()
        queued, self._queue = self._queue, []
        for envelope in self._unanswered():  # Slack retries what was sent and never acked
            envelope.retries += 1
            await self._transmit(ws, envelope)
        for envelope in queued:
            await self._transmit(ws, envelope)
        try:
            async for frame in ws:
                if frame.type == aiohttp.WSMsgType.TEXT and not self.silent:
                    self._acked(json.loads(frame.data))
        finally:
            if ws in self._sockets:
                self._sockets.remove(ws)
            await self._redeliver_from(ws)
            self._notify()
        return ws

    async def _redeliver_from(self, closed: web.WebSocketResponse) -> None:
        """What went out on a socket now closed and was never acked: again on another."""
        for envelope in self._unanswered():
            if self._sent_on.get(envelope.id) is closed and self._sockets and not self.silent:
                envelope.retries += 1
                await self._transmit(self.rng.choice(self._sockets), envelope)

    def _unanswered(self) -> list[Envelope]:
        return [
            e
            for e in self.envelopes.values()
            if e.sent_at is not None and e.acked_at is None and e.retries < MAX_RETRIES
        ]

    def _forget_acked(self, keep: int) -> None:
        """Drop the acked envelopes older than the newest `keep` (on the fake's loop): a
        new dict, so a thread reading the old one is not disturbed."""
        items = list(self.envelopes.items())
        old, new = items[:-keep], items[-keep:]
        self.envelopes = {k: e for k, e in old if e.acked_at is None} | dict(new)

    def _acked(self: FakeSlack, data: dict[str, Any]) -> None:
        envelope = self.envelopes.get(str(data.get("envelope_id")))
        if envelope is not None and envelope.acked_at is None:
            self._sent_on.pop(envelope.id, None)
            envelope.acked_at = time.monotonic()
            envelope.response = data.get("payload")
            self._notify()

    async def _drop(self: FakeSlack) -> None:
        for ws in list(self._sockets):
            self._sockets.remove(ws)
            await ws.close(code=aiohttp.WSCloseCode.GOING_AWAY, message=b"rotating")
        self._notify()


async def deliver_http(
    url: str,
    body: dict[str, Any] | str,
    secret: str,
    *,
    timestamp: int | None = None,
    signature: str | None = None,
    retry_num: int | None = None,
    form: bool = False,
    fields: bool = False,
) -> tuple[int, str]:
    """POST an Events API request as Slack does: signed body, timestamp, retry headers.
    `form`: an interactivity payload, sent form-encoded as `payload=<JSON>`; `fields`: a
    slash command, its fields form-encoded."""
    raw = body if isinstance(body, str) else json.dumps(body)
    if form:
        raw = "payload=" + quote(raw)
    if fields and isinstance(body, dict):
        raw, form = urlencode(body), True
    ts = str(timestamp if timestamp is not None else int(time.time()))
    sig = signature or SignatureVerifier(secret).generate_signature(timestamp=ts, body=raw)
    headers = {
        "Content-Type": "application/x-www-form-urlencoded" if form else "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sig,
    }
    if retry_num is not None:
        headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "timeout"})
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=raw.encode(), headers=headers) as resp,
    ):
        return resp.status, await resp.text()
