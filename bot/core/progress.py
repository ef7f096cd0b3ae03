"""Live progress: what a person sees while an agent works on their message.

The human node calls `received` as soon as a person's message is routed to an agent
(before any model call): the channel shows at once that work has begun (Slack's
status line in the thread, Discord's typing indicator, a line in the terminal) and
renews it while the work goes on. Agents name what they are doing (`status`:
"Searching memory") and feed the text the model writes as it streams (`text`); the
channel shows it (a Slack stream, a Discord message edited in place, the terminal)
and later finishes that same message with the outbox row's text (the outbox row
stays the truth, see the channels' `live` modules). `end` closes the work.

Channels implement `Surface`; a channel without one shows nothing until the answer
is delivered (email). Nothing here may fail an agent's turn: a surface's error is
logged and the work goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.core.messages import Inbound, Target
from bot.core.notices import WORKING

log = logging.getLogger(__name__)

#: a work nobody touched for this long is over (its end was missed: a worker's turn)
QUIET_SECONDS = 300.0
#: a worker's status, shown where its task came from, lasts this long after its last step
WORKER_QUIET_SECONDS = 30.0


class Surface(Protocol):
    """What a channel shows of work under way in one of its places."""

    #: seconds after which the platform forgets the indicator (renewed before then)
    refresh_seconds: float

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        """Show (or renew) that work goes on in `target`, saying `status`."""
        ...

    async def received(self, msg: Inbound, react: bool) -> None:
        """A person's message reached an agent (with `react`: an 👀 reaction on it)."""
        ...

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        """The work in `target` is over (clear the status; ✅ on `msg` when asked for)."""
        ...

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        """Text the model wrote, shown as it comes (never raises, never blocks)."""
        ...

    def restart(self, target: Target) -> None:
        """The model call whose text was shown failed: what follows is a retry."""
        ...

    async def abandon(self, target: Target) -> None:
        """The turn was stopped: end what was shown as it is, with nothing more."""
        ...


@dataclass
class Work:
    """One conversation's work under way, as its place shows it."""

    target: Target
    recipient: str | None
    inbound: Inbound | None
    status: str = WORKING
    quiet: float = QUIET_SECONDS  # untouched this long, the work is taken as over
    touched: float = field(default_factory=time.monotonic)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class Progress:
    """The runtime's side: which conversation is being worked on, and where it shows."""

    def __init__(self, *, streaming: bool = True, reactions: bool = False) -> None:
        self.streaming = streaming
        self.reactions = reactions
        self.surfaces: dict[str, Surface] = {}
        self.works: dict[str, Work] = {}
        self._calls: set[asyncio.Task[None]] = set()  # surface calls made beside the caller
        #: observers of each first visible call (the bench's clock)
        self.shown: list[Callable[[str], None]] = []

    def add(self, kind: str, surface: Surface) -> None:
        self.surfaces[kind] = surface

    def received(self, msg: Inbound, quiet: float = QUIET_SECONDS) -> None:
        """A person's message was routed to an agent: show at once that work begins.
        `quiet`: how long it shows without news (a worker's turn has no end call)."""
        surface = self.surfaces.get(msg.reply_to.kind)
        if surface is None:
            return
        work = self.works.get(msg.conversation)
        if work is None:
            work = Work(msg.reply_to, msg.sender.id, msg, quiet=quiet)
            self.works[msg.conversation] = work
            work.task = asyncio.create_task(self._keep(msg.conversation, work, surface))
        else:
            work.inbound, work.recipient = msg, msg.sender.id
            self.touch(work, WORKING)
        self._spawn(surface.received(msg, self.reactions))

    def status(self, key: str, text: str, where: Target | None = None) -> None:
        """An agent says what it does now ("Searching memory", "Asking Alice"). With
        `where` (a worker's origin), work nobody announced yet is shown there too, for
        as long as it goes on saying what it does (WORKER_QUIET_SECONDS)."""
        work = self.works.get(key)
        surface = self.surfaces.get(where.kind) if where is not None else None
        if work is None and where is not None and surface is not None:
            work = self.works[key] = Work(where, None, None, quiet=WORKER_QUIET_SECONDS)
            work.task = asyncio.create_task(self._keep(key, work, surface))
        if work is not None:
            self.touch(work, text)

    def streamer(self, key: str) -> Callable[[str], None] | None:
        """Where the model's text for conversation `key` goes as it streams; None when
        nothing is shown live there (streaming off, or no person waiting)."""
        work = self.works.get(key)
        surface = self.surfaces.get(work.target.kind) if work is not None else None
        if not self.streaming or work is None or surface is None:
            return None

        def feed(delta: str) -> None:
            work.touched = time.monotonic()
            surface.feed(work.target, work.recipient, delta)

        return feed

    def restart(self, key: str) -> None:
        """The model call streaming into `key` failed and will be made again."""
        work = self.works.get(key)
        surface = self.surfaces.get(work.target.kind) if work is not None else None
        if work is not None and surface is not None:
            surface.restart(work.target)

    async def abandon(self, key: str) -> None:
        """`key`'s turn was stopped: what was streamed stays as it is; the work ends."""
        work = self.works.get(key)
        surface = self.surfaces.get(work.target.kind) if work is not None else None
        if work is not None and surface is not None:
            await surface.abandon(work.target)
        self.end(key)

    def end(self, key: str) -> None:
        """The turn of conversation `key` is over."""
        work = self.works.pop(key, None)
        if work is not None and work.task is not None:
            work.task.cancel()
            surface = self.surfaces.get(work.target.kind)
            if surface is not None:
                self._spawn(surface.finished(work.target, work.inbound if self.reactions else None))

    def touch(self, work: Work, status: str) -> None:
        work.touched = time.monotonic()
        if status != work.status:
            work.status = status
            work.changed.set()

    def _spawn(self, call: Coroutine[Any, Any, None]) -> None:
        """Run a surface call beside the caller, its failure logged, never raised."""

        async def run() -> None:
            try:
                await call
            except Exception:
                log.exception("progress call failed")

        task = asyncio.create_task(run())
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _keep(self, key: str, work: Work, surface: Surface) -> None:
        """Show the work, then renew it before the platform forgets it, and show each
        new status, until the work ends (or nobody touched it for `work.quiet` seconds:
        the keeper wakes at that deadline, not at the next renewal, so a worker's
        status line is let go `WORKER_QUIET_SECONDS` after its last step)."""
        while time.monotonic() - work.touched < work.quiet:
            work.changed.clear()
            try:
                await surface.working(work.target, work.status, work.recipient)
            except Exception:  # progress is a courtesy: never the turn's failure
                log.exception("progress in %s failed", work.target)
            for observer in self.shown:
                observer(key)
            renew_at = time.monotonic() + surface.refresh_seconds
            while not work.changed.is_set():
                now = time.monotonic()
                wake = min(renew_at, work.touched + work.quiet)
                if now >= wake:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(work.changed.wait(), wake - now)
        if self.works.get(key) is work:
            del self.works[key]
