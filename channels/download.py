"""Downloading a file a person attached, over HTTP, for the Slack and Discord fetchers.

Streams the body and stops at the size cap (`FileTooLarge`), so a huge file is never
held in memory. Maps what goes wrong once: 401/403/404/410 are permanent (the bot
may not read the file; retrying cannot help), 429 and 5xx, network errors and
timeouts are transient (the intake retries them with backoff). A `text/html` answer
to a file download is a login page, not the file (what Slack serves to a token
that cannot read it).
"""

from __future__ import annotations

import contextlib

import aiohttp

from bot.seam import FetchError, FileTooLarge

CHUNK = 64 * 1024
PERMANENT = {400, 401, 403, 404, 410}


class Downloader:
    """One aiohttp session, opened on first use and closed with the channel."""

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        self.headers = headers or {}
        self._session: aiohttp.ClientSession | None = None

    async def get(self, url: str, max_bytes: int, expect_html: bool = False) -> bytes:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self.headers)
        try:
            async with self._session.get(url) as resp:
                _check(resp, expect_html)
                declared = resp.content_length
                if declared is not None and declared > max_bytes:
                    raise FileTooLarge(declared)
                return await _read(resp, max_bytes)
        except aiohttp.ClientError as exc:
            raise FetchError(f"{type(exc).__name__}: {exc}") from exc
        except (TimeoutError, OSError) as exc:
            raise FetchError(f"network: {type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()
            self._session = None


def _check(resp: aiohttp.ClientResponse, expect_html: bool) -> None:
    if resp.status in PERMANENT:
        raise FetchError(f"refused with HTTP {resp.status}", transient=False)
    if resp.status >= 300:
        raise FetchError(f"HTTP {resp.status}", transient=resp.status == 429 or resp.status >= 500)
    if resp.content_type == "text/html" and not expect_html:
        raise FetchError("the platform answered with a login page, not the file", transient=False)


async def _read(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    async for chunk in resp.content.iter_chunked(CHUNK):
        total += len(chunk)
        if total > max_bytes:
            raise FileTooLarge(total)
        parts.append(chunk)
    return b"".join(parts)
