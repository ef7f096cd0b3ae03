"""Discord's side of live progress (bot/core/progress.py): the typing indicator.

`POST /channels/{id}/typing` shows "is typing" for about ten seconds, or until the
bot posts; it is renewed every REFRESH_SECONDS while the work goes on. A thread that
is not opened yet (it opens with the first reply) shows it in its parent channel.
The answer is posted at its first words and edited as it grows (live.py), where the
place exists already; its posting ends the indicator.
"""

from __future__ import annotations

import discord

from bot.seam import Inbound, Target
from channels.discord.live import DiscordLives

REFRESH_SECONDS = 8.0


class DiscordProgress:
    refresh_seconds = REFRESH_SECONDS

    def __init__(self, client: discord.Client, lives: DiscordLives) -> None:
        self.client = client
        self.lives = lives

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        if target.thread:
            try:
                await self.client.http.send_typing(int(target.thread))
                return
            except discord.NotFound:
                pass  # the thread opens with the first reply: show it in the channel
        await self.client.http.send_typing(int(target.address))

    async def received(self, msg: Inbound, react: bool) -> None:
        if react:
            channel, message = _place(msg)
            await self.client.http.add_reaction(channel, message, "👀")

    async def finished(self, target: Target, msg: Inbound | None) -> None:
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
