"""The model SDKs' work off the bot's event loop: one thread with its own loop, where
every backend's client lives and each call runs.

A model call's client work is CPU on the caller's loop: the SDK copies and serialises
the request body, builds the HTTP request, parses the streamed answer event by event
into its models (about 7 ms of a turn's 11 ms, in two slices of several milliseconds
each). On the bot's loop, every hook's 2xx, chat message pickup and ack behind such a
slice waits for it. Here the loop only hands the call over and awaits its result; the
SDK runs in the model thread, between its own awaits, and the bot's loop serves what
arrives meanwhile (the one GIL is handed between the two threads every
`sys.getswitchinterval()` at most).

What crosses: the request (built on the bot's loop, not touched again until the answer
comes back), the answer or the error (`ModelUnavailable`/`ModelError` as raised), each
streamed text delta (handed to the caller's sink on the caller's loop, in order, before
the answer), and a cancellation (a person's stop, a timeout: the call's task in the
model thread is cancelled, which closes its stream).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agents.model.providers.base import Backend, LLMResponse, Request, TextSink

T = TypeVar("T")
#: the longest a thread holds the GIL while another waits for it (seconds)
SWITCH_SECONDS = 0.001


class ModelThread:
    """A daemon thread running an event loop, started at the first call."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._loop is not None

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=loop.run_forever, name="switchboard-model", daemon=True
                )
                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_SECONDS))
                self._thread.start()
                self._loop = loop
            return self._loop

    async def run(self, call: Coroutine[Any, Any, T]) -> T:
        """`call` run in the model thread, awaited here; cancelling this cancels it."""
        future = asyncio.run_coroutine_threadsafe(call, self._running())
        return await asyncio.wrap_future(future)

    def stop(self) -> None:
        """The loop stopped and closed, the thread joined (after the clients closed)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def relay(on_text: TextSink | None) -> TextSink | None:
    """A sink the model thread calls, handing each text to `on_text` on the caller's loop."""
    if on_text is None:
        return None
    loop = asyncio.get_running_loop()

    def sink(text: str) -> None:
        loop.call_soon_threadsafe(on_text, text)

    return sink


class Threaded:
    """A backend whose calls run in the model thread (the `Backend` contract unchanged)."""

    def __init__(self, inner: Backend, thread: ModelThread) -> None:
        self.inner = inner
        self.api = inner.api
        self.sdk = inner.sdk
        self._thread = thread

    async def create(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        return await self._thread.run(self.inner.create(request, relay(on_text)))

    async def describe(self, model: str) -> Any:
        return await self._thread.run(self.inner.describe(model))

    async def close(self) -> None:
        if self._thread.started:
            await self._thread.run(self.inner.close())
        else:  # never called: no client to close, no thread to start for it
            await self.inner.close()
