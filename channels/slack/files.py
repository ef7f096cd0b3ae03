"""Files in Slack messages: the event's file objects as attachments, and their download.

A message event carries `files`: each with `url_private_download`, which Slack serves
only with `Authorization: Bearer <bot token>` (scope `files:read`). Files Slack hides
(`mode` `hidden_by_limit`, `tombstone` for deleted ones) or that live elsewhere
(`external`) cannot be downloaded; they are named with a note instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Attachment, FetchError, FileTooLarge, safe_name
from channels.download import Downloader

#: Slack Connect: the event carries only the file id; files.info has the rest
CHECK_FILE_INFO = "check_file_info"
UNREADABLE = {
    "hidden_by_limit": "hidden by Slack's free-plan limit",
    "tombstone": "deleted in Slack",
    "external": "stored outside Slack",
}


def attachments(files: Sequence[Mapping[str, Any]]) -> list[Attachment]:
    return [_attachment(f) for f in files if isinstance(f, Mapping)]


def _attachment(f: Mapping[str, Any]) -> Attachment:
    name = safe_name(str(f.get("name") or f.get("title") or ""), fallback=f"file-{f.get('id', '')}")
    att = Attachment(
        name=name,
        content_type=str(f.get("mimetype") or "application/octet-stream"),
        size=int(f.get("size") or 0),
        source=str(f.get("url_private_download") or f.get("url_private") or ""),
        ref=str(f.get("id") or ""),
    )
    mode = str(f.get("mode") or "")
    if mode in UNREADABLE:
        att.note, att.source = f"cannot be read: {UNREADABLE[mode]}", ""
    elif f.get("file_access") == CHECK_FILE_INFO:
        att.source = ""  # a Slack Connect file: files.info gives the link (SlackFetcher)
    elif not att.source:
        att.note = "cannot be read: Slack gave no download link (files:read scope?)"
    return att


class SlackFetcher:
    def __init__(self, token: str, client: AsyncWebClient) -> None:
        self.downloader = Downloader({"Authorization": f"Bearer {token}"})
        self.client = client

    async def fetch(self, att: Attachment, max_bytes: int) -> bytes:
        if not att.source:
            await self._look_up(att)
        if att.size > max_bytes:
            raise FileTooLarge(att.size)
        try:
            return await self.downloader.get(att.source, max_bytes)
        except FileTooLarge:
            raise
        except FetchError as exc:
            if not exc.transient:
                raise FetchError(
                    f"Slack {exc} (the bot token cannot read this file: it needs the "
                    "files:read scope and access to the channel)",
                    transient=False,
                ) from exc
            raise

    async def _look_up(self, att: Attachment) -> None:
        """A Slack Connect file's link and size, from files.info (scope files:read)."""
        try:
            info = await self.client.files_info(file=att.ref)
        except SlackApiError as exc:
            error = exc.response.get("error", exc.response.status_code)
            transient = exc.response.status_code == 429 or exc.response.status_code >= 500
            raise FetchError(f"Slack files.info refused: {error}", transient) from exc
        except (SlackClientError, OSError, TimeoutError) as exc:
            raise FetchError(f"Slack unreachable: {type(exc).__name__}") from exc
        f = info.get("file") or {}
        att.size = int(f.get("size") or att.size)
        att.source = str(f.get("url_private_download") or f.get("url_private") or "")
        if not att.source:
            raise FetchError("Slack gave no download link for this file", transient=False)

    async def close(self) -> None:
        await self.downloader.close()
