"""The durable outbox: every message to a person is stored, then delivered.

Rows are delivered in order per target (one task per target key at a time),
concurrently across targets. Each channel states its pacing (`pace_seconds` between
posts to one pace key: the target, or what the channel's `pace_key` makes of it, such
as a Slack channel for all its threads); a platform's Retry-After pauses that key.
Transient failures back off exponentially with jitter; a permanent failure is
recorded as an event and reported to the home target. Nothing is dropped on a crash: a row is
marked sent only after the channel returned.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bot.core.channel import Channel, PermanentDeliveryError, TransientDeliveryError
from bot.core.events import EventLog
from bot.core.messages import DeliveryReceipt, Outbound
from bot.core.tasks import cancel_all
from bot.store.core import OutboxRow, Store

log = logging.getLogger(__name__)

MAX_BACKOFF = 300.0
BATCH = 200  # rows read at a time
STOP_GRACE_SECONDS = 5.0


def _unfenced() -> None:
    """A single node (SQLite) is never fenced."""


def backoff(attempt: int, base: float, cap: float = MAX_BACKOFF) -> float:
    """Exponential backoff with full jitter on the upper half: base * 2^attempt."""
    delay = min(cap, base * (2**attempt))
    return delay / 2 + random.random() * delay / 2


#: pace keys kept before the spent ones are dropped (a key per channel, or per target)
PACE_KEYS_MAX = 1000


class Pacer:
    """The earliest moment each pace key may receive its next post."""

    def __init__(self) -> None:
        #: bounded: past PACE_KEYS_MAX keys, those whose moment has passed are dropped
        self._free_at: dict[str, float] = {}

    async def wait(self, key: str, spacing: float = 0.0) -> None:
        """Wait for the key's next free moment and claim it.

        Claiming matters when several targets share a key (threads of one Slack
        channel): each waiter takes the next slot, `spacing` after the one before,
        instead of all firing together when the key frees up.
        """
        now = time.monotonic()
        if len(self._free_at) > PACE_KEYS_MAX:
            self._free_at = {k: at for k, at in self._free_at.items() if at > now}
        start = max(now, self._free_at.get(key, 0.0))
        self._free_at[key] = start + spacing
        if start > now:
            await asyncio.sleep(start - now)

    def hold(self, key: str, seconds: float) -> None:
        self._free_at[key] = max(self._free_at.get(key, 0.0), time.monotonic() + seconds)


Delivered = Callable[[Outbound, DeliveryReceipt], None]
Failed = Callable[[Outbound, str], None]


class Outbox:
    def __init__(
        self,
        store: Store,
        events: EventLog,
        *,
        retry_base: float = 1.0,
        on_delivered: Delivered | None = None,
        on_failed: Failed | None = None,
        fence: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.events = events
        self.retry_base = retry_base
        self.channels: dict[str, Channel] = {}
        self.pacer = Pacer()
        self._on_delivered = on_delivered
        #: told of every delivery after `on_delivered` (bot/ops/hooks_desk.py: threads)
        self.observers: list[Callable[[Outbound, DeliveryReceipt], None]] = []
        self._on_failed = on_failed
        #: asked before every post: raises when this node may no longer send (a leader
        #: that lost its lease, bot/leadership.py)
        self.fence: Callable[[], None] = fence if fence is not None else _unfenced
        self._wake = asyncio.Event()
        self._stopping = False
        self._seen = 0  # the last seq `run` looked at
        self._busy: set[str] = set()  # targets being drained
        #: busy targets `run` saw new rows of: their drain reads again before it ends
        self._behind: set[str] = set()
        self._waiting: dict[str, float] = {}  # targets held until their head's retry time
        self._tasks: set[asyncio.Task[None]] = set()
        self._sending: set[asyncio.Task[Any]] = set()  # drains inside a channel's deliver

    def add_channel(self, channel: Channel) -> None:
        self.channels[channel.kind] = channel
        self.wake()

    def put(self, msg: Outbound) -> None:
        """Store the message (inside the caller's transaction, if any) and wake the loop."""
        self.store.outbox.enqueue(msg)
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            new, more = self._new_targets()
            for key in [*new, *self._due_waiting()]:
                self._busy.add(key)
                task = asyncio.create_task(self._drain(key))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if not more:
                await self._sleep()

    async def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Start no new delivery and give those under way `grace` seconds to finish: one
        cancelled mid-request may have reached the platform, and would be sent again at
        the next start. Then cancel what is left."""
        self._stopping = True
        self.wake()
        for task in self._tasks - self._sending:  # waiting for a pace slot or a retry
            task.cancel()
        if self._sending:
            await asyncio.wait(set(self._sending), timeout=grace)
        await cancel_all(list(self._tasks))

    def _new_targets(self) -> tuple[list[str], bool]:
        """Targets of rows queued since the last look that nothing is draining or
        holding for a retry (those read their own new rows), and whether more wait.
        Only new rows are read: under a burst of replies, re-reading every pending
        row on each wake made the loop quadratic."""
        rows = self.store.outbox.new_outbox_rows(self._seen, BATCH)
        if rows:
            self._seen = rows[-1][0]
        held = self._busy.union(self._waiting)
        self._behind.update(t for _, t in rows if t in self._busy)
        idle = dict.fromkeys(t for _, t in rows if t not in held)  # in the order queued
        return list(idle), len(rows) == BATCH

    def _due_waiting(self) -> list[str]:
        now = time.time()
        due = [key for key, at in self._waiting.items() if at <= now]
        for key in due:
            del self._waiting[key]
        return due

    async def _sleep(self) -> None:
        timeout = None
        if self._waiting:
            timeout = max(0.0, min(self._waiting.values()) - time.time())
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            pass

    async def _drain(self, key: str) -> None:
        """Deliver one target's rows in order until none is left, or until its first
        row waits for a retry (which holds back the rest). It reads the target's rows
        again only when one may be left: a full batch, a row that waits for its retry, or
        a row `run` saw queued meanwhile (`_behind`). A row queued after `run`'s last look
        is seen by its next one, which finds the target no longer busy and drains it."""
        try:
            rows = self.store.outbox.pending_outbox(key, BATCH)
            while rows:
                if rows[0].next_at > time.time():
                    self._waiting[key] = rows[0].next_at
                    self.wake()  # `run` sleeps until the earliest retry: this may be it
                    return
                settled = True
                for row in rows:
                    if self._stopping:
                        return
                    if not await self._deliver(key, row):
                        settled = False  # its retry time now heads the queue: read again
                        break
                    await asyncio.sleep(0)  # a channel that answers at once: one row a slice
                if settled and len(rows) < BATCH and key not in self._behind:
                    return
                self._behind.discard(key)
                rows = self.store.outbox.pending_outbox(key, BATCH)
        finally:
            self._busy.discard(key)
            self._behind.discard(key)

    async def _deliver(self, key: str, row: OutboxRow) -> bool:
        msg = row.message
        channel = self.channels.get(msg.target.kind)
        if channel is None:
            self._fail(row, f"no {msg.target.kind} channel is configured")
            return True
        pace = channel.pace_key(msg.target)
        await self.pacer.wait(pace, channel.pace_seconds)
        self.fence()
        sending = asyncio.current_task()
        assert sending is not None
        self._sending.add(sending)
        try:
            receipt = await channel.deliver(msg)
        except TransientDeliveryError as exc:
            return self._retry(key, pace, row, str(exc), exc.retry_after)
        except PermanentDeliveryError as exc:
            self._fail(row, str(exc))
            return True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an adapter bug must not stop the outbox
            log.exception("delivery to %s raised", key)
            return self._retry(key, pace, row, f"{type(exc).__name__}: {exc}", None)
        finally:
            self._sending.discard(sending)
        self.pacer.hold(pace, channel.pace_seconds)
        self.store.outbox.outbox_sent(row.seq, asdict(receipt))
        self.events.emit(
            "message.sent", msg.agent, target=key, kind=msg.kind, id=msg.id,
            conversation=msg.conversation, trigger_id=msg.meta.get("trigger_id"),
        )  # fmt: skip
        if self._on_delivered is not None:
            self._on_delivered(msg, receipt)
        for observer in self.observers:
            observer(msg, receipt)
        return True

    def _retry(
        self, key: str, pace: str, row: OutboxRow, error: str, retry_after: float | None
    ) -> bool:
        delay = retry_after if retry_after is not None else backoff(row.attempts, self.retry_base)
        self.pacer.hold(pace, delay)
        self.store.outbox.outbox_retry(row.seq, time.time() + delay, error)
        self.events.emit(
            "outbox.retry",
            row.message.agent,
            target=key,
            error=error,
            delay=round(delay, 3),
            attempt=row.attempts + 1,
        )
        return False

    def _fail(self, row: OutboxRow, error: str) -> None:
        self.store.outbox.outbox_failed(row.seq, error)
        self.events.emit(
            "outbox.failed",
            row.message.agent,
            target=str(row.message.target),
            error=error,
            id=row.message.id,
        )
        if self._on_failed is not None:
            self._on_failed(row.message, error)
