"""The fake Discord's gateway session: sequence numbers, READY, RESUME with replay.

One bot session at a time, as for a single-shard bot. Every dispatch gets the next
sequence number and is kept, so a client that RESUMEs with its last sequence gets
what it missed while its socket was down, then RESUMED. `drop()` cuts the socket
like a network failure would (no close frame); `drop(hold=True)` also makes the
next RESUME wait for `release()`, so a test can post messages into the gap.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

Payload = dict[str, Any]


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """JSON as Discord sends it: discord.py parses only `application/json`, no charset."""
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={**(headers or {}), "Content-Type": "application/json"},
    )


@dataclass(eq=False)
class Connection:
    ws: web.WebSocketResponse
    transport: asyncio.BaseTransport | None


class GatewaySession:
    def __init__(self, token: str, ready: Callable[[], tuple[Payload, Payload]]) -> None:
        self.token = token
        self._ready = ready
        self.session_id: str | None = None
        self.seq = 0
        self.log: list[Payload] = []
        #: None: every frame since IDENTIFY is kept for RESUME; n: the newest n, as Discord
        #: keeps a bounded buffer (a RESUME from before it gets INVALID_SESSION)
        self.keep: int | None = None
        self.identifies = 0
        self.resumes = 0
        self.intents: int | None = None
        self.heartbeats = 0  # HEARTBEATs received (each acked at once, as Discord does)
        self.live: Connection | None = None
        self._lock = asyncio.Lock()
        self._held = asyncio.Event()
        self._held.set()
        self._identified = threading.Event()

    def connected(self, ws: web.WebSocketResponse, transport: Any) -> Connection:
        return Connection(ws, transport)

    def disconnected(self, conn: Connection) -> None:
        if self.live is conn:
            self.live = None

    def wait_identified(self, timeout: float) -> None:
        if not self._identified.wait(timeout):
            raise AssertionError("the bot never identified on the fake gateway")

    async def received(self, conn: Connection, frame: Payload) -> None:
        op, data = frame.get("op"), frame.get("d")
        if op == 1:
            self.heartbeats += 1
            await conn.ws.send_str(json.dumps({"op": 11}))
        elif op == 2:
            await self._identify(conn, data or {})
        elif op == 6:
            await self._resume(conn, data or {})

    async def _identify(self, conn: Connection, data: Payload) -> None:
        if data.get("token") != self.token:
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        ready, guild = self._ready()
        async with self._lock:
            self.identifies += 1
            self.intents = data.get("intents")
            self.session_id = ready["session_id"]
            self.seq, self.log = 0, []
            self.live = conn
            await self._send(self._frame("READY", ready))
            await self._send(self._frame("GUILD_CREATE", guild))
        self._identified.set()

    async def _resume(self, conn: Connection, data: Payload) -> None:
        await self._held.wait()
        if data.get("session_id") != self.session_id or data.get("token") != self.token:
            await conn.ws.send_str(json.dumps({"op": 9, "d": False}))
            return
        missed = (data.get("seq") or 0) + 1
        if self.keep is not None and self.log and self.log[0]["s"] > missed:
            await conn.ws.send_str(json.dumps({"op": 9, "d": False}))  # the gap is gone
            return
        async with self._lock:
            self.resumes += 1
            self.live = conn
            for frame in self.log:
                if frame["s"] > (data.get("seq") or 0):
                    await self._send(frame)
            await self._send(self._frame("RESUMED", {}))

    async def dispatch(self, event: str, data: Payload) -> None:
        async with self._lock:
            frame = self._frame(event, data)
            if self.live is not None:
                await self._send(frame)

    def _frame(self, event: str, data: Payload) -> Payload:
        self.seq += 1
        frame = {"op": 0, "t": event, "s": self.seq, "d": data}
        self.log.append(frame)
        if self.keep is not None and len(self.log) > 2 * self.keep:
            del self.log[: -self.keep]
        return frame

    async def _send(self, frame: Payload) -> None:
        conn = self.live
        if conn is None:
            return
        try:
            await conn.ws.send_str(json.dumps(frame))
        except (ConnectionError, RuntimeError):
            self.live = None  # the socket went away: the frame stays in the log for RESUME

    async def drop(self, hold: bool) -> None:
        async with self._lock:
            conn, self.live = self.live, None
            if hold:
                self._held.clear()
            if conn is not None and conn.transport is not None:
                conn.transport.abort()

    async def release(self) -> None:
        self._held.set()

    async def close(self) -> None:
        self._held.set()
        conn, self.live = self.live, None
        if conn is not None:
            await conn.ws.close()


async def message_body(request: web.Request) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
    """The JSON body of a message post, and its files when it came as multipart (Discord
    takes `payload_json` and `files[n]` parts)."""
    if not request.content_type.startswith("multipart/"):
        return await request.json(), []
    body: dict[str, Any] = {}
    files: list[tuple[str, bytes]] = []
    reader = await request.multipart()
    async for part in reader:
        if not isinstance(part, BodyPartReader):
            continue
        if part.name == "payload_json":
            body = json.loads(await part.text())
        elif part.name and part.name.startswith("files["):
            files.append((part.filename or "file", bytes(await part.read())))
    return body, files
