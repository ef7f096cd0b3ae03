"""The fake Discord's message history (a mixin of `FakeDiscord`): GET messages with
`after` / `before` / `limit`, newest first, as Discord answers; Unknown Channel and
Missing Access as Discord's error codes; and a gate that holds history requests, for
tests that kill or cut a session in the middle of a catch-up.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from tests.fakes.discord_server import json_response


class HistoryApi:
    def hold_history(self, after: int = 0) -> None:
        """Answer `after` more history requests, then hold the rest until released."""
        self._call(self._hold(after))

    async def _hold(self, after: int) -> None:
        self._history_free_for = after
        self._history_gate = asyncio.Event()

    def release_history(self) -> None:
        self._call(self._release())

    async def _release(self) -> None:
        self._history_free_for = -1
        if self._history_gate is not None:
            self._history_gate.set()

    async def _history(self, request: web.Request) -> web.Response:
        """GET messages: `after` an id, the `limit` oldest after it; else (`before` an id,
        or nothing) the `limit` newest before it. Newest first, as Discord answers
        (discord.py reverses them for `oldest_first`)."""
        self._seen(request)
        self.history_calls += 1
        await self._history_turn()
        cid = request.match_info["cid"]
        if cid not in self.channels:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        if cid in self.forbidden:
            return json_response({"message": "Missing Access", "code": 50001}, 403)
        limit = int(request.query.get("limit", 50))
        here = sorted(
            (m for m in self.messages.values() if m["channel_id"] == cid),
            key=lambda m: int(m["id"]),
        )
        if "after" in request.query:
            after = int(request.query["after"])
            return json_response(list(reversed([m for m in here if int(m["id"]) > after][:limit])))
        before = int(request.query.get("before", 1 << 63))
        earlier = [m for m in here if int(m["id"]) < before]
        return json_response(list(reversed(earlier[-limit:])))

    async def _history_turn(self) -> None:
        """Hold this history request when `hold_history` says so."""
        if self._history_free_for > 0:
            self._history_free_for -= 1
        elif self._history_free_for == 0 and self._history_gate is not None:
            gate = self._history_gate
            self.history_waiting += 1
            self._notify()
            try:
                await gate.wait()
            finally:
                self.history_waiting -= 1
