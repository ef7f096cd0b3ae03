"""Files in Discord messages: attachments in, downloaded from Discord's CDN.

An attachment's `url` is a signed CDN link that needs no token (the bot token is
never sent there). Discord states each attachment's size, so a file over
SWITCHBOARD_FILE_MAX_BYTES is noted without being downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import discord

from bot.files import safe_name
from bot.intake import FileTooLarge
from bot.messages import Attachment
from channels.download import Downloader


def attachments(items: Sequence[discord.Attachment]) -> list[Attachment]:
    return [
        Attachment(
            name=safe_name(a.filename, fallback=f"attachment-{a.id}"),
            content_type=a.content_type or "application/octet-stream",
            size=a.size,
            source=a.url,
            ref=str(a.id),
        )
        for a in items
    ]


class DiscordFetcher:
    def __init__(self) -> None:
        self.downloader = Downloader()

    async def fetch(self, att: Attachment, max_bytes: int) -> bytes:
        if att.size > max_bytes:
            raise FileTooLarge(att.size)
        return await self.downloader.get(att.source, max_bytes)

    async def close(self) -> None:
        await self.downloader.close()
