"""The seam between the core and a platform adapter (`channels/*`).

A channel turns platform events into `Inbound` messages handed to the human node
(`HumanNode.accept`, which journals before the channel acks), and delivers
`Outbound` messages back. Delivery failures are mapped at the adapter's edge to
the two errors below, so the outbox knows whether to retry.
"""

from __future__ import annotations

from typing import Protocol

from bot.messages import DeliveryReceipt, Outbound, Target


class DeliveryError(Exception):
    """Base of delivery failures."""


class TransientDeliveryError(DeliveryError):
    """Try again later: after `retry_after` seconds when the platform said so."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentDeliveryError(DeliveryError):
    """Retrying cannot help (bad address, 5xx from SMTP, unknown channel)."""


class Channel(Protocol):
    """A platform adapter. `kind` matches the delivery target kind it serves.

    Optional: `pace_key(target) -> str`, the key the outbox paces posts by when the
    platform's rate limit is wider than one target (Slack limits per channel, whatever
    the thread). Without it, pacing is per target (see `pace_key` below).
    """

    kind: str
    #: minimum seconds between two posts to the same target (platform pacing)
    pace_seconds: float

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt: ...


def pace_key(channel: Channel, target: Target) -> str:
    """The key posts to `target` are paced by: the channel's `pace_key`, else the target."""
    key_of = getattr(channel, "pace_key", None)
    return str(key_of(target)) if callable(key_of) else str(target)
