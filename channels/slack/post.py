"""Posting an `Outbound` to Slack: one `chat.postMessage` per chunk, errors mapped here.

The outbox decides when to post (pacing per channel, retries); this module maps what
Slack answers to the outbox's two errors: HTTP 429 is transient with Slack's
`Retry-After`, as are 5xx, Slack's own outage errors and network failures; any other
Slack error (unknown channel, bot not in channel, archived, bad token) is permanent.
Slack has no idempotency key, so each chunk goes through the core's attempt records
(`bot/outbox/attempts.py`): recorded as tried before `chat.postMessage`, as posted with its
`ts` after. A chunk found tried but not posted (the process died, or the connection
broke, after Slack's answer) is looked up first: every post carries Slack message
`metadata` naming its outbox row and chunk, read back from its thread (or the
channel's recent history) with `include_all_metadata`, and posted only if absent. A
split message resumes after its last posted chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import (
    Answer,
    AttemptRow,
    Attempts,
    ChannelStore,
    DeliveryError,
    DeliveryReceipt,
    Outbound,
    Pacer,
    PermanentDeliveryError,
    Target,
    TransientDeliveryError,
)
from channels.slack.approvals import is_request, request_blocks
from channels.slack.format import render
from channels.slack.history import HistoryError, read
from channels.slack.identity import header
from channels.slack.live import SlackLives
from channels.slack.types import METADATA_TYPE
from channels.slack.upload import SlackUploader

TRANSIENT_ERRORS = {
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
}
#: What to do about the permanent errors people actually hit.
HINTS = {
    "channel_not_found": "no such channel, or the bot cannot see it",
    "not_in_channel": "invite the bot to the channel first (/invite @bot)",
    "is_archived": "the channel is archived",
    "invalid_auth": "SLACK_BOT_TOKEN is not valid",
    "not_authed": "SLACK_BOT_TOKEN is not set",
    "token_revoked": "SLACK_BOT_TOKEN was revoked",
    "missing_scope": "the app lacks a scope (chat:write; the *:history scopes to read back)",
}
KIND = "slack"
LOOKUP_MARGIN = 60.0  # seconds before a try that its lookup reads from
LOOKUP_PAGES = 10


def pace_key(target: Target) -> str:
    """Slack paces chat.postMessage per channel, whatever the thread."""
    return f"slack:{target.address}"


class SlackPoster:
    def __init__(
        self,
        client: AsyncWebClient,
        store: ChannelStore,
        pacer: Pacer,
        chunk_spacing: float,
        data_dir: Path = Path("."),
        reader: AsyncWebClient | None = None,
        lives: SlackLives | None = None,
    ) -> None:
        self.client = client  # posts: a client that never repeats a request by itself
        self.reader = reader or client  # lookups: may retry a broken connection
        self.store = store
        self.pacer = pacer  # the outbox's: chunks take their slots beside other threads' posts
        self.chunk_spacing = chunk_spacing
        self.uploader = SlackUploader(client, data_dir, mapped)
        #: answers shown while written: a row's first part finishes its live message
        self.lives = lives

    async def deliver(self, msg: Outbound, custom_username: bool) -> DeliveryReceipt:
        """Post every chunk not yet posted, then upload the files into the thread; a
        message with files that fits in one post is the upload's comment."""
        attempts = Attempts(self.store, msg.id)
        if msg.attachments and not is_request(msg):  # a request keeps its buttons: a post
            chunks = render(msg, custom_username=False)  # a file comment shows no username
            if len(chunks) == 1:
                return await self._upload_with_comment(msg, attempts, chunks[0])
        receipt = await self._post_chunks(msg, custom_username, attempts)
        if msg.attachments:
            channel = await self._channel_of(msg.target.address)
            await self.uploader.upload(msg, attempts, channel, receipt.thread, "")
        return receipt

    async def _upload_with_comment(
        self, msg: Outbound, attempts: Attempts, comment: str
    ) -> DeliveryReceipt:
        channel = await self._channel_of(msg.target.address)
        answer = await self.uploader.upload(msg, attempts, channel, msg.target.thread, comment)
        ts = str(answer.get("ts") or "") or None
        thread = msg.target.thread or ts
        refs = [str(Target(KIND, channel, thread))] if thread else []
        return DeliveryReceipt(platform_id=ts, thread=thread, refs=refs)

    async def _post_chunks(
        self, msg: Outbound, custom_username: bool, attempts: Attempts
    ) -> DeliveryReceipt:
        chunks = render(msg, custom_username)
        posted: list[Answer] = []
        for index, chunk in enumerate(chunks):
            part = str(index)
            if index and attempts.posted(part) is None:
                # Slack's limit is per channel, chunks included
                await self.pacer.wait(pace_key(msg.target), self.chunk_spacing)

            async def post(chunk: str = chunk, index: int = index) -> Answer:
                if index == 0 and (adopted := await self._adopt(msg, chunk, len(chunks))):
                    return adopted
                return await self._post(msg, chunk, index, custom_username)

            async def find(tried: AttemptRow, index: int = index) -> Answer | None:
                return await self._find(msg, index, tried)

            posted.append(await attempts.once(part, post, find))
            if index == 0 and self.lives is not None:
                self.lives.forget(msg.target, str(posted[0]["ts"]))
        # a user id as target posts in the DM; its replies come from the DM channel
        channel = str(posted[0]["channel"])
        threads = [msg.target.thread] if msg.target.thread else [str(a["ts"]) for a in posted]
        return DeliveryReceipt(
            platform_id=str(posted[0]["ts"]),
            thread=threads[0],
            refs=[str(Target(KIND, channel, ts)) for ts in threads],
        )

    async def _adopt(self, msg: Outbound, first: str, parts: int) -> Answer | None:
        """The live message of the thread (shown while the model wrote) made this row's
        first part, if there is one (channels/slack/live.py)."""
        if self.lives is None:
            return None
        try:
            return await self.lives.adopt(msg, msg.agent, first, whole=parts == 1)
        except SlackApiError as exc:
            raise mapped(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc

    async def _post(self, msg: Outbound, text: str, index: int, custom_username: bool) -> Answer:
        args: dict[str, Any] = {
            "channel": msg.target.address,
            "text": text,
            # how this part is found again if its answer is lost (see `_find`)
            "metadata": {"event_type": METADATA_TYPE, "event_payload": _payload(msg.id, index)},
        }
        if msg.target.thread:
            args["thread_ts"] = msg.target.thread
        if is_request(msg):  # Approve / Deny buttons under the request
            args["blocks"] = request_blocks(text, str(msg.meta["approval_id"]))
        if custom_username:
            args["username"] = msg.agent
        try:
            response = await self.client.chat_postMessage(**args)
        except SlackApiError as exc:
            raise mapped(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc
        return {"channel": str(response.get("channel") or msg.target.address), "ts": response["ts"]}

    async def _find(self, msg: Outbound, index: int, tried: AttemptRow) -> Answer | None:
        """The part posted by a try whose answer was lost, read back from its thread
        (or the channel's recent history) by the metadata it carries; None if absent."""
        channel = await self._channel_of(msg.target.address)
        if msg.target.thread:
            method, args = "conversations.replies", {"channel": channel, "ts": msg.target.thread}
        else:
            method, args = "conversations.history", {"channel": channel}
        if tried.at:  # Slack's clock and ours differ a little; the margin covers it
            args["oldest"] = f"{tried.at - LOOKUP_MARGIN:.6f}"
        want = _payload(msg.id, index)
        try:
            async for message in read(
                self.reader, method, patient=False, max_pages=LOOKUP_PAGES, **args
            ):
                meta = message.get("metadata") or {}
                if meta.get("event_type") == METADATA_TYPE and meta.get("event_payload") == want:
                    return {"channel": channel, "ts": str(message["ts"])}
        except HistoryError as exc:
            if exc.retry_after is not None:
                raise TransientDeliveryError(f"Slack rate limit ({exc})", exc.retry_after) from exc
            raise PermanentDeliveryError(
                f"cannot tell whether Slack has this message already: {exc}"
            ) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc
        return None

    async def _channel_of(self, address: str) -> str:
        """The channel to read: a user id's DM channel (posts to a user id land there)."""
        if not address.startswith("U"):
            return address
        try:
            opened = await self.reader.conversations_open(users=address)
        except SlackApiError as exc:
            raise mapped(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc
        return str((opened.get("channel") or {}).get("id") or address)


def _payload(outbox_id: str, index: int) -> dict[str, Any]:
    return {"outbox_id": outbox_id, "part": index}


def mapped(exc: SlackApiError) -> DeliveryError:
    """Slack's answer as the outbox's error: transient (with Retry-After) or permanent."""
    status = exc.response.status_code
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    error = str(data.get("error") or f"HTTP {status}")
    if status == 429 or error == "ratelimited":
        retry_after = _retry_after(exc.response.headers)
        return TransientDeliveryError(f"Slack rate limit ({error})", retry_after)
    if status >= 500 or error in TRANSIENT_ERRORS:
        return TransientDeliveryError(f"Slack error {error}")
    hint = HINTS.get(error)
    return PermanentDeliveryError(
        f"Slack refused the message: {error}" + (f" ({hint})" if hint else "")
    )


def _retry_after(headers: Mapping[str, Any]) -> float:
    try:
        return max(0.0, float(header(headers, "retry-after").split(",")[0]))
    except ValueError:
        return 1.0  # Slack always sends it; if not, a second is its usual window
