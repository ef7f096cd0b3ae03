"""The seam between the core and a platform adapter (`channels/*`).

A channel turns platform events into `Inbound` messages handed to the core
(`ChannelContext.accept`, which journals before the channel acks), and delivers
`Outbound` messages back. Delivery failures are mapped at the adapter's edge to
the two errors below, so the outbox knows whether to retry. `ChannelStore` is the
slice of the store a channel may touch (its own key/value state, its health, the
journal's recent rows for catch-up, attempt records); `BaseChannel` gives the
optional capabilities of `Channel` their defaults.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from bot.core.messages import DeliveryReceipt, Inbound, Outbound, Target
from bot.core.progress import Surface


class DeliveryError(Exception):
    """Base of delivery failures."""


class TransientDeliveryError(DeliveryError):
    """Try again later: after `retry_after` seconds when the platform said so."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentDeliveryError(DeliveryError):
    """Retrying cannot help (bad address, 5xx from SMTP, unknown channel)."""


HttpRoute = tuple[str, str, Callable[[Any], Awaitable[Any]]]


class Channel(Protocol):
    """A platform adapter. `kind` matches the delivery target kind it serves."""

    kind: str
    #: minimum seconds between two posts to the same pace key (platform pacing)
    pace_seconds: float
    #: set when the channel ends by itself (the terminal at end of input); None when
    #: it never does (it runs until the app stops it)
    closed: asyncio.Event | None
    #: (method, path, handler) routes to mount on the app's HTTP server (Slack's HTTP
    #: Events mode); the handler takes and returns aiohttp's request and response
    http_routes: Sequence[HttpRoute]
    #: how the channel shows work under way and text as it is written (None: it does not)
    progress: Surface | None

    def pace_key(self, target: Target) -> str:
        """The key the outbox paces posts to `target` by: the target itself, unless the
        platform's rate limit is wider than one target (Slack limits per channel,
        whatever the thread)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt: ...


class BaseChannel:
    """The defaults of `Channel`'s optional capabilities: paced per target, and never
    closing by itself. A channel (or a test's fake) subclasses it and overrides."""

    closed: asyncio.Event | None = None
    http_routes: Sequence[HttpRoute] = ()
    progress: Surface | None = None

    def pace_key(self, target: Target) -> str:
        return str(target)


class ChannelOutbox(Protocol):
    """The slice of the store's outbox a channel touches: what the bot said in a place,
    and the attempt records of the parts it posts."""

    def sent_to(
        self, targets: list[str], since: float, limit: int
    ) -> list[tuple[float, Outbound]]: ...

    def attempts(self, outbox_id: str) -> list[AttemptRow]: ...

    def set_attempt(self, outbox_id: str, row: AttemptRow) -> None: ...


class ChannelStore(Protocol):
    """The slice of the store a channel touches (a channel never runs SQL)."""

    @property
    def outbox(self) -> ChannelOutbox: ...

    def tx(self) -> AbstractContextManager[None]: ...

    def get_kv(self, key: str) -> str | None: ...

    def set_kv(self, key: str, value: str) -> None: ...

    def delete_kv(self, key: str) -> None: ...

    def kv_prefixed(self, prefix: str) -> dict[str, str]: ...

    def set_health(self, channel: str, state: str, detail: str = "") -> None: ...

    def recent_inbound(
        self, channel: str, since: float, until: float, limit: int
    ) -> list[Inbound]: ...

    def quarantine(self, source: str, row: Any, exc: Exception) -> None:
        """Set aside a stored value that does not decode, and report it."""
        ...


@dataclass(slots=True)
class AttemptRow:
    """One part of an outbound message (a chunk, a file) that a channel tried to post:
    `state` is `trying` (sent, answer not recorded: it may exist on the platform) or
    `posted` (`detail` then holds what the platform answered)."""

    part: str
    state: str
    detail: dict[str, Any]
    at: float
