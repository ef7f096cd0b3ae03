"""The Discord channel (discord.py): guild channels, threads and DMs as conversations.

`bot/app.py` imports this package only when DISCORD_BOT_TOKEN is set, so discord.py
loads only then. Roles: `client.py` (the gateway connection and health), `events.py`
(MESSAGE_CREATE -> the human node), `deliver.py` + `format.py` (agent messages ->
Discord), `threads.py` (which threads the bot is in), `errors.py` (failures ->
the outbox's errors).
"""

from __future__ import annotations

from bot.seam import ChannelContext
from channels.discord.channel import DiscordChannel
from config.settings import Settings

__all__ = ["DiscordChannel", "build"]


def build(settings: Settings, ctx: ChannelContext) -> DiscordChannel:
    return DiscordChannel(ctx, settings)
