"""The one aiohttp server of `switchboard run`: operator endpoints and channels' routes.

Slack's HTTP Events mode mounts its route here (a channel that serves HTTP exposes
`http_routes`), so one port serves `/healthz`, `/metrics`, the dashboard and
`/slack/events`. A port that cannot be bound is a one-line settings error naming the
variable the port came from.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from config.settings import SettingsError

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = tuple[str, str, Handler]


@web.middleware
async def _headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Defence in depth for the dashboard: no inline script runs, no framing, no sniffing."""
    response = await handler(request)
    response.headers.setdefault(
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response


class HttpServer:
    def __init__(self, host: str, port: int, port_variable: str) -> None:
        self.host = host
        self.port = port
        self.port_variable = port_variable
        self.app = web.Application(middlewares=[_headers])
        self._runner: web.AppRunner | None = None

    def add(self, routes: list[Route]) -> None:
        for method, path, handler in routes:
            self.app.router.add_route(method, path, handler)

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError as exc:
            await self.stop()
            raise SettingsError(self._bind_problem(exc)) from exc
        log.info("HTTP on %s:%s (/healthz, /metrics, /)", self.host, self.port)

    def _bind_problem(self, exc: OSError) -> str:
        where = f"{self.host}:{self.port}"
        if exc.errno == errno.EADDRINUSE:
            return f"{self.port_variable}: {where} is already in use; choose a free port."
        if exc.errno == errno.EACCES:
            return f"{self.port_variable}: no permission to listen on {where} (ports < 1024)."
        return f"{self.port_variable}: cannot listen on {where} ({exc.strerror or exc})."

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
