"""Posting an `Outbound` to Slack: one `chat.postMessage` per chunk, errors mapped here.

The outbox decides when to post (pacing per channel, retries); this module maps what
Slack answers to the outbox's two errors: HTTP 429 is transient with Slack's
`Retry-After`, as are 5xx, Slack's own outage errors and network failures; any other
Slack error (unknown channel, bot not in channel, archived, bad token) is permanent.
A message split in several chunks records each posted chunk in the store before
the next, so a retry or a restart resumes after the last chunk posted, never
posting one twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.channel import DeliveryError, PermanentDeliveryError, TransientDeliveryError
from bot.messages import DeliveryReceipt, Outbound, Target
from bot.outbox import Pacer
from bot.store import Store
from channels.slack.format import render
from channels.slack.identity import header

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
    "missing_scope": "the app lacks the chat:write scope",
}
KIND = "slack"
_PROGRESS = "slack.posted."


def pace_key(target: Target) -> str:
    """Slack paces chat.postMessage per channel, whatever the thread."""
    return f"slack:{target.address}"


class SlackPoster:
    def __init__(
        self, client: AsyncWebClient, store: Store, pacer: Pacer, chunk_spacing: float
    ) -> None:
        self.client = client
        self.store = store
        self.pacer = pacer  # the outbox's: chunks take their slots beside other threads' posts
        self.chunk_spacing = chunk_spacing

    async def deliver(self, msg: Outbound, custom_username: bool) -> DeliveryReceipt:
        """Post every chunk not yet posted; the receipt names the thread replies go to."""
        chunks = render(msg, custom_username)
        posted = self._progress(msg.id) if len(chunks) > 1 else []
        channel = msg.target.address
        for index in range(len(posted), len(chunks)):
            if index:  # Slack's limit is per channel, chunks included
                await self.pacer.wait(pace_key(msg.target), self.chunk_spacing)
            # a user id as target posts in the DM; its replies come from the DM channel
            channel, ts = await self._post(msg, chunks[index], custom_username)
            posted.append(ts)
            if len(chunks) > 1:
                self.store.set_kv(_PROGRESS + msg.id, json.dumps(posted))
        if len(chunks) > 1:
            self.store.delete_kv(_PROGRESS + msg.id)
        threads = [msg.target.thread] if msg.target.thread else posted
        return DeliveryReceipt(
            platform_id=posted[0],
            thread=threads[0],
            refs=[str(Target(KIND, channel, ts)) for ts in threads],
        )

    def _progress(self, msg_id: str) -> list[str]:
        raw = self.store.get_kv(_PROGRESS + msg_id)
        return list(json.loads(raw)) if raw else []

    async def _post(self, msg: Outbound, text: str, custom_username: bool) -> tuple[str, str]:
        args: dict[str, Any] = {"channel": msg.target.address, "text": text}
        if msg.target.thread:
            args["thread_ts"] = msg.target.thread
        if custom_username:
            args["username"] = msg.agent
        try:
            response = await self.client.chat_postMessage(**args)
        except SlackApiError as exc:
            raise mapped(exc) from exc
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            raise TransientDeliveryError(f"Slack unreachable: {type(exc).__name__}: {exc}") from exc
        return str(response.get("channel") or msg.target.address), str(response["ts"])


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
