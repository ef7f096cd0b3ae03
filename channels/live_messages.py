"""What Slack's and Discord's live messages share: an answer shown while the model
writes it, one message per place at a time, finished by the outbox row.

The text fed arrives in `pending`; a writer task puts it on the platform (`_write_once`,
the platform's own call) at most every `pause` seconds and moves it to `shown`. A
message's place is kept in the channel's key/value state (`kv`) from the moment it
exists, so a restart finishes that message instead of posting a second one; one
restored from there is `diverged` (what it shows is not the new model text: the row's
text replaces it). `limit` bounds what a live message shows: the rest arrives with the
row, as its other parts.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from bot.seam import ChannelStore, Target


@dataclass(kw_only=True)
class LiveText:
    """One message written while the model writes it."""

    target: Target
    shown: str = ""  # on the platform (the model's text, without the speaker)
    pending: str = ""  # fed, not yet on the platform
    diverged: bool = False  # a retried model call or a restart: what shows is not its text
    closed: bool = False  # adopted or abandoned: write no more
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    writer: asyncio.Task[None] | None = None


L = TypeVar("L", bound=LiveText)


class LiveMessages(ABC, Generic[L]):
    """The live messages of one channel, by place (`str(target)`). A channel's subclass
    says how its message is written and kept (the three abstract methods); one lacking
    any of them cannot be made."""

    kv: str  # the key/value prefix of their records
    limit: int  # what a live message shows at most
    pause: float  # seconds between two writes to one message

    def __init__(self, store: ChannelStore) -> None:
        self.store = store
        self.lives: dict[str, L] = {}  # bounded by the places with a turn under way

    # -- fed by the progress seam --------------------------------------------------------
    def take(self, live: L | None, delta: str) -> None:
        """Add `delta` to what `live` will show, and see that a writer runs."""
        if (
            live is None
            or live.closed
            or (not live.shown and not live.pending and not delta.strip())
        ):
            return
        room = self.limit - len(live.shown) - len(live.pending)
        if room <= 0:
            return  # what goes beyond arrives with the row (its other parts)
        live.pending += (delta if live.shown or live.pending else delta.lstrip())[:room]
        if live.writer is None or live.writer.done():
            live.writer = asyncio.create_task(self._write(live))

    def restart(self, target: Target) -> None:
        live = self.get(target)
        if live is not None and (live.shown or live.pending):
            live.diverged = True  # the retry's text would repeat what is shown

    # -- the records ---------------------------------------------------------------------
    def get(self, target: Target) -> L | None:
        key = str(target)
        live = self.lives.get(key)
        if live is None and (saved := self.store.get_kv(self.kv + key)) is not None:
            live = self.lives[key] = self._restored(target, json.loads(saved))
            live.diverged = True  # from before a restart: the row's text replaces it
        return live

    @abstractmethod
    def _restored(self, target: Target, record: dict[str, Any]) -> L:
        """The live message a saved record (`_record`) describes, after a restart."""

    @abstractmethod
    def _record(self, live: L) -> dict[str, Any]:
        """What the key/value state keeps of `live`: enough to find its message again."""

    def _save(self, live: L) -> None:
        self.store.set_kv(self.kv + str(live.target), json.dumps(self._record(live)))

    def _drop(self, live: L) -> None:
        live.closed = True
        if self.lives.get(str(live.target)) is live:
            del self.lives[str(live.target)]
        self.store.delete_kv(self.kv + str(live.target))

    async def _close(self, live: L) -> None:
        """No more writes; the one under way finishes first."""
        live.closed = True
        async with live.lock:
            pass

    # -- writing -------------------------------------------------------------------------
    async def _write(self, live: L) -> None:
        while live.pending and not live.closed and not live.diverged:
            if len(live.shown) >= self.limit:
                return  # the rest arrives with the row
            async with live.lock:
                if live.closed:
                    return
                wait = await self._write_once(live)
            await asyncio.sleep(wait)

    @abstractmethod
    async def _write_once(self, live: L) -> float:
        """One write of the pending text; how long to wait before the next."""

    def _wrote(self, live: L, text: str) -> float:
        """`text` is on the platform now."""
        live.pending = live.pending[len(text) :]
        live.shown += text
        self._save(live)
        return self.pause
