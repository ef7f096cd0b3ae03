"""Discord's side of live progress (bot/core/progress.py): the typing indicator.

`POST /channels/{id}/typing` shows "is typing" for about ten seconds, or until the
bot posts; it is renewed every REFRESH_SECONDS while the work goes on. A thread that
is not opened yet (it opens with the first reply) shows it in its parent channel. The
indicator is the channel's, not a conversation's: one request per channel per
REFRESH_SECONDS shows it for every conversation at work there (a busy channel's
mentions would otherwise each send one, queue behind its rate limit and be cancelled
unsent when their answers are done); an answer posted there ends it, so the next
conversation there sends again at once.
The answer is posted at its first words and edited as it grows (live.py), where the
place exists already; its posting ends the indicator.
"""

from __future__ import annotations

import time

import discord

from bot.seam import Bounded, Inbound, Target
from channels.discord.live import DiscordLives

REFRESH_SECONDS = 8.0
#: channels whose last "typing" is remembered (the oldest leaves past it)
TYPING_HELD = 1_000


class DiscordProgress:
    refresh_seconds = REFRESH_SECONDS

    def __init__(self, client: discord.Client, lives: DiscordLives) -> None:
        self.client = client
        self.lives = lives
        #: channel id -> time.monotonic() of the last "typing" sent there
        self._typed: Bounded[int, float] = Bounded(TYPING_HELD)

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        if target.thread:
            try:
                await self._typing(int(target.thread))
                return
            except discord.NotFound:
                pass  # the thread opens with the first reply: show it in the channel
        await self._typing(int(target.address))

    async def _typing(self, channel: int) -> None:
        now = time.monotonic()
        if now - self._typed.get(channel, now - REFRESH_SECONDS) < REFRESH_SECONDS:
            return  # showing already, for this conversation or another one there
        self._typed.put(channel, now)
        try:
            await self.client.http.send_typing(channel)
        except BaseException:
            self._typed.pop(channel, None)  # not shown: the next call sends
            raise

    async def received(self, msg: Inbound, react: bool) -> None:
        if react:
            channel, message = _place(msg)
            await self.client.http.add_reaction(channel, message, "👀")

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        self._typed.pop(int(target.thread or target.address), None)  # its answer ended it
        if msg is not None:
            channel, message = _place(msg)
            await self.client.http.add_reaction(channel, message, "✅")

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        self.lives.feed(target, delta)

    def restart(self, target: Target) -> None:
        self.lives.restart(target)

    async def abandon(self, target: Target) -> None:
        await self.lives.abandon(target)


def _place(msg: Inbound) -> tuple[int, int]:
    """The channel and id of a person's Discord message."""
    channel = msg.meta.get("channel") or msg.reply_to.address
    return int(str(channel)), int(msg.message_id)
