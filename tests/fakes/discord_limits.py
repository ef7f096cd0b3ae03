"""The fake Discord's rate limits (a mixin of `FakeDiscord`), as Discord states them.

Every REST answer carries Discord's headers: `X-RateLimit-Limit`, `-Remaining`,
`-Reset` (epoch seconds), `-Reset-After` (seconds) and `-Bucket` (one hash per route).
A bucket is a route and its major parameter (the channel, guild, application or
interaction), `bucket_limit` requests per `bucket_seconds` (5 per 5 s, as Discord's
message routes per channel); a request past it gets 429 with `retry_after`,
`X-RateLimit-Scope: user` and `Via`, as Discord answers a client that did not wait.
discord.py reads the headers: it lets up to the limit through at once, waits out a
spent bucket before sending, and resets a bucket when its window ends (without them it
sends one request at a time per bucket, and a bucket never expires).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.discord_server import json_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: the fake's route parameters that Discord counts a bucket per (its "major parameters")
_MAJOR = ("cid", "gid", "app", "iid")


@dataclass
class Window:
    ends: float  # time.monotonic() when the bucket fills again
    used: int = 0


class LimitsApi:
    def _init_limits(self) -> None:
        self.bucket_limit = 5
        self.bucket_seconds = 5.0
        self.limited: list[str] = []  # paths answered 429 by a spent bucket (not scripted)
        self._windows: dict[tuple[str, str], Window] = {}  # (route, channel) -> its window

    @web.middleware
    async def _rate_limits(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/api/"):
            return await handler(request)
        route = f"{request.method} {request.match_info.route.resource.canonical}"  # type: ignore[union-attr]
        major = next((request.match_info[k] for k in _MAJOR if k in request.match_info), "")
        window = self._window(route, major)
        window.used += 1
        left = window.ends - time.monotonic()
        headers = {
            "X-RateLimit-Limit": str(self.bucket_limit),
            "X-RateLimit-Remaining": str(max(0, self.bucket_limit - window.used)),
            "X-RateLimit-Reset": f"{time.time() + left:.3f}",
            "X-RateLimit-Reset-After": f"{left:.3f}",
            "X-RateLimit-Bucket": hashlib.blake2b(route.encode(), digest_size=8).hexdigest(),
        }
        if window.used > self.bucket_limit:
            self.limited.append(request.path)
            body = {"message": "You are being rate limited.", "retry_after": round(left, 3)}
            body.update({"global": False, "code": 0})
            headers |= {"Retry-After": str(max(1, round(left))), "X-RateLimit-Scope": "user"}
            return json_response(body, 429, headers | {"Via": "1.1 google"})
        response = await handler(request)
        for name, value in headers.items():
            response.headers.setdefault(name, value)  # a scripted failure's own stay
        return response

    def _window(self, route: str, channel: str) -> Window:
        now = time.monotonic()
        window = self._windows.get((route, channel))
        if window is None or now >= window.ends:
            if len(self._windows) > 10_000:  # the fake's own memory in a long soak
                self._windows = {k: w for k, w in self._windows.items() if w.ends > now}
            window = self._windows[(route, channel)] = Window(now + self.bucket_seconds)
        return window
