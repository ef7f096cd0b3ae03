"""Discord failures mapped once, at the edge, to the outbox's two delivery errors.

discord.py already waits out short rate limits (it reads `X-RateLimit-*` and
`retry_after`) and retries 5xx a few times itself; what reaches us is final for
this attempt. Transient: 429 (after `retry_after`), 5xx, network errors. Permanent:
the rest of 4xx (a missing permission or an unknown channel does not heal by retrying).
The user-facing texts live here, each saying what to do.
"""

from __future__ import annotations

import asyncio

import aiohttp
import discord

from bot.seam import DeliveryError, PermanentDeliveryError, TransientDeliveryError

# Discord JSON error codes we act on
UNKNOWN_MESSAGE = 10008
WRONG_CHANNEL_TYPE = 50024
THREAD_ARCHIVED = 50083  # an edit in a thread that went quiet (a new message reopens it)
THREAD_EXISTS = 160004

TOKEN_REFUSED = (
    "DISCORD_BOT_TOKEN was refused by Discord: copy the bot token again from the "
    "Developer Portal (Bot > Reset Token)."
)
INTENT_MISSING = (
    "Discord refused the message-content intent: enable 'Message Content Intent' for the bot "
    "in the Developer Portal (Bot > Privileged Gateway Intents)."
)
_HINTS = {
    401: "check DISCORD_BOT_TOKEN",
    403: "give the bot View Channel, Send Messages, Send Messages in Threads and "
    "Create Public Threads there",
    404: "the channel or thread does not exist, or the bot cannot see it",
}
NETWORK_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def delivery_error(exc: Exception) -> DeliveryError:
    """The outbox's view of a Discord failure."""
    if isinstance(exc, discord.RateLimited):
        return TransientDeliveryError(f"Discord rate limit: {exc}", retry_after=exc.retry_after)
    if isinstance(exc, discord.HTTPException):
        return _http_error(exc)
    if isinstance(exc, NETWORK_ERRORS):
        return TransientDeliveryError(f"Discord unreachable: {type(exc).__name__}: {exc}")
    return TransientDeliveryError(f"{type(exc).__name__}: {exc}")


def _http_error(exc: discord.HTTPException) -> DeliveryError:
    text = f"Discord answered {exc.status} (code {exc.code}): {exc.text or 'no details'}"
    if exc.status == 429:
        return TransientDeliveryError(text, retry_after=_retry_after(exc))
    if exc.status >= 500:
        return TransientDeliveryError(text)
    hint = _HINTS.get(exc.status)
    return PermanentDeliveryError(f"{text}; {hint}" if hint else text)


def _retry_after(exc: discord.HTTPException) -> float | None:
    """A 429 that discord.py did not wait out itself (e.g. without a `Via` header)."""
    headers = getattr(exc.response, "headers", None) or {}
    try:
        return float(headers.get("Retry-After", ""))
    except ValueError:
        return None
