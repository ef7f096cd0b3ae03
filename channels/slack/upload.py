"""Uploading an agent's files into a Slack thread, as slack_sdk's `files_upload_v2` does:
`files.getUploadURLExternal` for each file, a POST of its bytes to the returned URL,
then one `files.completeUploadExternal` with `channel_id` and `thread_ts` (and the
message as `initial_comment` when it fits in one post) that shares them all.

Slack has no idempotency key here either, so the upload is one part of the message's
attempt records (`bot/outbox/attempts.py`): the file ids Slack hands out are recorded as the
try goes, and an upload found tried but not recorded as done is looked up with
`files.info`: shared into the channel already means done (no second upload); else it
starts again (an unshared upload is invisible to people). A file Slack would refuse
(empty, over its 1 GB limit, gone from the workspace) is a permanent delivery error:
the outbox records `outbox.failed` and tells the home target.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import (
    Answer,
    Attachment,
    AttemptRow,
    Attempts,
    DeliveryError,
    Outbound,
    PermanentDeliveryError,
    TransientDeliveryError,
    human_size,
)

PART = "files"
SLACK_MAX_BYTES = 1024**3  # Slack's limit per file
UPLOAD_TIMEOUT = aiohttp.ClientTimeout(total=300)


class SlackUploader:
    def __init__(
        self,
        client: AsyncWebClient,
        data_dir: Path,
        mapped: Callable[[SlackApiError], DeliveryError],
    ) -> None:
        self.client = client
        self.data_dir = data_dir
        self._mapped = mapped  # post.mapped: Slack's answer as the outbox's error
        self._session: aiohttp.ClientSession | None = None

    async def upload(
        self, msg: Outbound, attempts: Attempts, channel: str, thread: str | None, comment: str
    ) -> Answer:
        """Share every attachment of `msg` in `channel` / `thread`, once."""

        async def post() -> Answer:
            return await self._upload(msg.attachments, attempts, channel, thread, comment)

        async def find(tried: AttemptRow) -> Answer | None:
            files = tried.detail.get("files") or []
            return await self._shared(str(files[0]["id"]), channel) if files else None

        return await attempts.once(PART, post, find)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _upload(
        self,
        atts: list[Attachment],
        attempts: Attempts,
        channel: str,
        thread: str | None,
        comment: str,
    ) -> Answer:
        files: list[dict[str, str]] = []
        for att in atts:
            data = await asyncio.to_thread(self._bytes, att)
            ticket = await self._call(
                "files_getUploadURLExternal", filename=att.name, length=len(data)
            )
            files.append({"id": str(ticket["file_id"]), "title": att.name})
            attempts.record(PART, "trying", {"files": files})  # what a lookup asks about
            await self._put(str(ticket["upload_url"]), data)
        args: dict[str, Any] = {"files": files, "channel_id": channel}
        if thread:
            args["thread_ts"] = thread
        if comment:
            args["initial_comment"] = comment
        await self._call("files_completeUploadExternal", **args)
        found = await self._shared(files[0]["id"], channel)
        return found or {"channel": channel, "ts": thread or "", "files": files}

    def _bytes(self, att: Attachment) -> bytes:
        path = self.data_dir / att.path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PermanentDeliveryError(f"cannot attach {att.name}: {exc.strerror}") from exc
        if not data:
            raise PermanentDeliveryError(f"cannot attach {att.name}: Slack takes no empty files")
        if len(data) > SLACK_MAX_BYTES:
            raise PermanentDeliveryError(
                f"cannot attach {att.name}: {human_size(len(data))} is over Slack's 1 GB per file"
            )
        return data

    async def _shared(self, file_id: str, channel: str) -> Answer | None:
        """Where `file_id` was shared in `channel` (its message ts), or None."""
        try:
            info = await self._call("files_info", file=file_id)
        except PermanentDeliveryError:
            return None  # file_not_found: never completed
        shares = (info.get("file") or {}).get("shares") or {}
        for kind in ("public", "private"):
            for share in (shares.get(kind) or {}).get(channel) or []:
                return {"channel": channel, "ts": str(share.get("ts") or "")}
        return None

    async def _call(self, method: str, **args: Any) -> dict[str, Any]:
        try:
            response = await getattr(self.client, method)(**args)
        except SlackApiError as exc:
            raise self._mapped(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def _put(self, url: str, data: bytes) -> None:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=UPLOAD_TIMEOUT)
        try:
            async with self._session.post(url, data=data) as resp:
                if resp.status >= 400:
                    raise TransientDeliveryError(f"Slack upload answered HTTP {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack upload failed: {type(exc).__name__}") from exc
