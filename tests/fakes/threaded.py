"""The scaffolding the wire-faithful fakes share: an aiohttp app in a thread of its own.

A `ThreadedServer` runs its aiohttp application on 127.0.0.1, on a free port, in a
daemon thread with its own event loop, so one fake serves an app in the test's loop
and a `switchboard` subprocess alike, and its timings are a remote server's view.

A subclass adds its routes in `_routes`, closes what it holds open in `_closing`,
names what a `wait_for` predicate is given in `_watched`, and says in `_progress`
what a timed-out wait should report. Handlers call `_notify()` (or change state
under `with self._changed:` and notify) whenever something a test may wait for has
changed; tests wait from any thread with `wait_for`, or from a loop with `until`.
`with FakeX() as fake:` starts a fake and stops it on the way out.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from aiohttp import web

S = TypeVar("S")  # what a `wait_for` predicate looks at
T = TypeVar("T")


class ThreadedServer(Generic[S]):
    name = "fake server"  # in errors: "fake Slack did not start"
    client_max_size = 1024**2  # aiohttp's default request body limit

    def __init__(self) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._changed = threading.Condition()

    # -- what a subclass provides ----------------------------------------------------
    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def _closing(self) -> None:
        """Close what the fake holds open (sockets) before the app is cleaned up."""

    def _watched(self) -> S:
        raise NotImplementedError

    def _progress(self) -> str:
        return ""

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> Self:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"{self.name} did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._call(self._shutdown())
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._startup())
        ready.set()
        self._loop.run_forever()
        # as asyncio.run does: no task is left pending for the garbage collector to find
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _startup(self) -> None:
        app = web.Application(client_max_size=self.client_max_size)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _shutdown(self) -> None:
        await self._closing()
        if self._runner is not None:
            await self._runner.cleanup()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run `coro` on the fake's loop from another thread and return its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # -- waiting (from any thread) ---------------------------------------------------
    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[S], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self._watched()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{self.name}: condition not met after {timeout}s; {self._progress()}"
                    )
                self._changed.wait(min(left, 0.05))

    async def until(self, predicate: Callable[[S], bool], timeout: float = 10.0) -> None:
        await asyncio.to_thread(self.wait_for, predicate, timeout)
