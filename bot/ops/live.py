"""Recent events, live: a server-sent events stream for the dashboard.

One event-log subscriber fans each event out to the connected clients. Every client
has a bounded queue: a client that stops reading (a stalled tab, a socket nobody
drains) fills it and is dropped, so it cannot grow our memory; the browser's
EventSource reconnects by itself when it comes back. Writes have a time limit too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.core.events import Event, EventLog
from bot.ops.event_text import what

log = logging.getLogger(__name__)

QUEUE_LIMIT = 256
MAX_CLIENTS = 32
KEEPALIVE_SECONDS = 15.0
WRITE_SECONDS = 10.0


def summarize(event: Event) -> dict[str, Any]:
    """What the dashboard shows of an event (the browser renders it as text)."""
    return {"type": event.type, "agent": event.agent_id, "ts": event.ts, "data": what(event)}


@dataclass(eq=False)
class _Client:
    task: asyncio.Task[Any] | None
    queue: asyncio.Queue[bytes] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))


class LiveEvents:
    def __init__(self, events: EventLog) -> None:
        self.clients: set[_Client] = set()
        self.dropped = 0
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()
        for client in list(self.clients):
            self._drop(client)

    def _on_event(self, event: Event) -> None:
        if not self.clients:
            return
        frame = f"data: {json.dumps(summarize(event))}\n\n".encode()
        for client in list(self.clients):
            try:
                client.queue.put_nowait(frame)
            except asyncio.QueueFull:
                log.warning("dropping a dashboard event stream that stopped reading")
                self._drop(client)

    def _drop(self, client: _Client) -> None:
        if client in self.clients:
            self.clients.discard(client)
            self.dropped += 1
            if client.task is not None:
                client.task.cancel()

    async def stream(self, request: web.Request) -> web.StreamResponse:
        if len(self.clients) >= MAX_CLIENTS:
            return web.Response(status=503, text="too many live dashboard streams")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        client = _Client(asyncio.current_task())
        self.clients.add(client)
        try:
            await self._pump(client, response)
        except (ConnectionResetError, TimeoutError):
            pass
        finally:
            self.clients.discard(client)
        return response

    async def _pump(self, client: _Client, response: web.StreamResponse) -> None:
        await response.write(b"retry: 2000\n\n")
        while True:
            frame = b": keepalive\n\n"
            with contextlib.suppress(TimeoutError):
                frame = await asyncio.wait_for(client.queue.get(), KEEPALIVE_SECONDS)
            async with asyncio.timeout(WRITE_SECONDS):
                await response.write(frame)
