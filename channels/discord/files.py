"""Files in Discord messages: attachments in (downloaded from Discord's CDN), and an
agent's files out (multipart uploads, as `discord.File`).

An attachment's `url` is a signed CDN link that needs no token (the bot token is
never sent there). Discord states each attachment's size, so a file over
SWITCHBOARD_FILE_MAX_BYTES is noted without being downloaded. Going out, Discord
takes at most 10 files and 10 MiB per message (servers boosted to level 2 take
more; a bot cannot tell), so files are batched within those limits, and a single
file over them is refused before anything is posted (`outbox.failed`, not a drop).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import discord

from bot.seam import Attachment, FileTooLarge, PermanentDeliveryError, human_size, safe_name
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


MAX_FILES = 10
MAX_BYTES = 10 * 1024 * 1024


def batches(atts: list[Attachment], data_dir: Path) -> list[list[Attachment]]:
    """The files in groups Discord takes in one message, in order."""
    out: list[list[Attachment]] = []
    size = 0
    for att in atts:
        path = data_dir / att.path
        if not path.is_file():
            raise PermanentDeliveryError(f"cannot attach {att.name}: it is no longer there")
        att.size = path.stat().st_size
        if att.size > MAX_BYTES:
            raise PermanentDeliveryError(
                f"cannot attach {att.name}: {human_size(att.size)} is over Discord's "
                f"{human_size(MAX_BYTES)} per message"
            )
        if not out or len(out[-1]) >= MAX_FILES or size + att.size > MAX_BYTES:
            out.append([])
            size = 0
        out[-1].append(att)
        size += att.size
    return out


def as_files(batch: list[Attachment], data_dir: Path) -> list[discord.File]:
    return [discord.File(data_dir / att.path, filename=att.name) for att in batch]
