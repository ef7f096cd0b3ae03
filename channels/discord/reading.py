"""`read_channel` for Discord: a channel's or thread's history, newest first until
`since` or `limit`, through discord.py (`GET /channels/{id}/messages`). Needs the
View Channel and Read Message History permissions; DISCORD_ALLOWED_CHANNELS, when
set, limits what may be read as it limits what is answered.
"""

from __future__ import annotations

import discord

from bot.seam import Line, Page, ReadRefused, Target
from channels.discord.errors import NETWORK_ERRORS


class DiscordReader:
    def __init__(self, client: discord.Client, allowed_channels: list[str]) -> None:
        self.client = client
        self.allowed = set(allowed_channels)

    async def read_history(self, target: Target, since: float | None, limit: int) -> Page:
        where = target.thread or target.address
        if self.allowed and not ({target.address, where} & self.allowed):
            raise ReadRefused(f"{target} is not in DISCORD_ALLOWED_CHANNELS")
        try:
            channel = self.client.get_partial_messageable(int(where))
        except ValueError:
            raise ReadRefused(f"{where!r} is not a Discord channel id") from None
        lines: list[Line] = []
        cut = False
        try:
            async for message in channel.history(limit=limit + 1):
                at = message.created_at.timestamp()
                if since is not None and at < since:
                    break
                if len(lines) == limit:
                    cut = True
                    break
                lines.append(_line(message))
        except discord.Forbidden as exc:
            raise ReadRefused(
                f"Discord refused to read {target}: the bot needs Read Message History there"
            ) from exc
        except discord.NotFound as exc:
            raise ReadRefused(f"Discord has no channel {where} the bot can see") from exc
        except (discord.DiscordException, *NETWORK_ERRORS) as exc:
            raise ReadRefused(f"Discord could not be read: {type(exc).__name__}: {exc}") from exc
        return Page(lines, cut)


def _line(message: discord.Message) -> Line:
    files = [a.filename for a in message.attachments]
    return Line(message.created_at.timestamp(), message.author.display_name, message.content, files)
