"""Threads going quiet in the fake Discord (a mixin of `FakeDiscord`), as Discord does it.

A thread with no new message for its `auto_archive_duration` (minutes) is archived:
`thread_metadata.archived` turns true and THREAD_UPDATE goes out, on which discord.py
drops the thread from its cache; GUILD_CREATE lists only the threads still active. A
message sent into an archived thread that is not locked unarchives it first (THREAD_UPDATE
with `archived: false`, then MESSAGE_CREATE), for a person and the bot alike; the bot's
post into an archived thread that is locked, and an edit of a message in any archived
thread, get 400 with code 50083 ("Thread is archived").

`fake.minute` is how long one of Discord's minutes lasts here, in seconds: 60 by
default (a thread archives after a real day), less in a soak that runs a month fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import GatewaySession, json_response
from tests.fakes.kept import Kept

THREAD_ARCHIVED = 50083


class ArchiveApi:
    channels: dict[str, p.Payload]
    gateway: GatewaySession

    def _init_archive(self) -> None:
        self.minute = 60.0
        #: ids of threads archived, in order (a thread may repeat)
        self.archived: Kept[str] = Kept()
        self._active: dict[str, float] = {}  # open thread id -> monotonic time of its last message
        self._archiver: asyncio.Task[None] | None = None

    def _start_archiver(self) -> None:
        self._archiver = asyncio.get_running_loop().create_task(self._archive_quiet())

    async def _stop_archiver(self) -> None:
        if self._archiver is not None:
            self._archiver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._archiver

    def _active_since_now(self, thread_id: str) -> None:
        """A thread made or written in: its quiet time starts again."""
        self._active[thread_id] = time.monotonic()

    async def _wake(self, channel: p.Payload) -> None:
        """A message is about to go into `channel`: an archived thread opens again."""
        if channel.get("type") != p.PUBLIC_THREAD:
            return
        meta = channel["thread_metadata"]
        if meta["archived"] and not meta["locked"]:
            meta.update(archived=False, archive_timestamp=p.now_iso())
            await self.gateway.dispatch("THREAD_UPDATE", _as_now(channel))
        self._active_since_now(str(channel["id"]))

    def _refuse_if_archived(self, channel_id: str) -> web.Response | None:
        channel = self.channels.get(channel_id) or {}
        if (channel.get("thread_metadata") or {}).get("archived"):
            body = {"message": "Thread is archived", "code": THREAD_ARCHIVED}
            return json_response(body, 400)
        return None

    def archive(self, thread_id: str) -> None:
        """The thread is archived now (as its quiet time running out, or a moderator)."""
        self._call(self._archive(str(thread_id)))  # type: ignore[attr-defined]

    async def _archive(self, thread_id: str) -> None:
        self._active.pop(thread_id, None)
        channel = self.channels.get(thread_id)
        if channel is None or channel["thread_metadata"]["archived"]:
            return
        channel["thread_metadata"].update(archived=True, archive_timestamp=p.now_iso())
        self.archived.append(thread_id)
        await self.gateway.dispatch("THREAD_UPDATE", _as_now(channel))

    async def _archive_quiet(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, max(0.01, self.minute / 4)))
            now = time.monotonic()
            for thread_id, since in list(self._active.items()):
                channel = self.channels.get(thread_id) or {}
                minutes = (channel.get("thread_metadata") or {}).get("auto_archive_duration", 0)
                if now - since >= minutes * self.minute:
                    await self._archive(thread_id)


def _as_now(channel: p.Payload) -> p.Payload:
    """The thread as it is now (a RESUME replays the frame as it was sent)."""
    return {**channel, "thread_metadata": dict(channel["thread_metadata"])}
