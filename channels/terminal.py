"""The terminal channel: one person talking to Switchboard on stdin/stdout.

Each line is a message (routed like any other: `@Alice ...` reaches a worker, a plain
line answers the open question of a worker that asked here). Output shows who
speaks. `/status` prints the status tables, `catchup` (or `/catchup`) what the agents
said since you last spoke (no model call), `/quit` (or end of input) leaves.

Input that is not a terminal (a pipe, a file, /dev/null) is a script: with a
`settle` hook (the chat command sets one) each line waits until the previous one is
answered, and end of input waits for the last answers before leaving. Lines are read
by a daemon thread, which works for every kind of stdin (the loop's pipe reader
refuses files and /dev/null) and never holds up the exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import TextIO

from bot.seam import BaseChannel, ChannelContext, DeliveryReceipt, Inbound, Outbound, Sender, Target
from channels.terminal_live import TerminalProgress
from config.settings import Settings

CONVERSATION = "terminal"
CATCHUP = ("catchup", "/catchup")
BANNER = (
    "Switchboard: you are talking to the coordinator. "
    "@Name talks to a worker; /status shows what runs; catchup shows what you missed; "
    "/quit leaves."
)


class TerminalChannel(BaseChannel):
    kind = "terminal"
    pace_seconds = 0.0

    def __init__(
        self,
        ctx: ChannelContext,
        settings: Settings,
        stdin: TextIO = sys.stdin,
        stdout: TextIO = sys.stdout,
    ) -> None:
        self.ctx = ctx
        self.settings = settings
        self.stdin = stdin
        self.stdout = stdout
        self.person = Sender(getpass.getuser(), getpass.getuser())
        self.closed: asyncio.Event = asyncio.Event()  # end of input ends the chat
        #: waits until the agents are done with what was said (set by the chat command)
        self.settle: Callable[[], Awaitable[None]] | None = None
        #: what is still waiting for people when a script ends (set by the chat command)
        self.leftovers: Callable[[], str] | None = None
        self._reader: asyncio.Task[None] | None = None
        #: a status line while agents work (at a terminal), the answer as it is written
        self.live = TerminalProgress(stdout, _is_tty(stdout))
        self.progress = self.live

    async def start(self) -> None:
        self._print(BANNER)
        self.ctx.set_health(self.kind, "connected", "stdin/stdout")
        self._reader = asyncio.create_task(self._read())

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        self.ctx.set_health(self.kind, "stopped")

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        rest = self.live.printed(msg)
        if rest is not None:  # streamed: its beginning is on screen already
            self.stdout.write(rest)
            self.stdout.flush()
        elif msg.kind == "question":
            self._print(
                f"[{msg.agent} asks] {msg.text}\n  (answer with a plain line, or @{msg.agent} ...)"
            )
        else:
            self._print(f"[{msg.agent}] {msg.text}")
        for att in msg.attachments:  # the terminal shows where the file is
            self._print(f"  file: {(self.settings.data_dir / att.path).resolve()}")
        return DeliveryReceipt(platform_id=msg.id)

    @property
    def scripted(self) -> bool:
        """Input from a pipe or a file, not a person at a terminal."""
        try:
            return not self.stdin.isatty()
        except (ValueError, OSError):  # a closed stdin
            return True

    async def _read(self) -> None:
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        _start_reader(self.stdin, lines, asyncio.get_running_loop())
        scripted = self.scripted and self.settle is not None
        while (line := await lines.get()) is not None:
            line = line.strip()
            if line in ("/quit", "/exit"):
                self.closed.set()
                return
            if line == "/status":
                self._print(self.ctx.status_text())
            elif line.lower() in CATCHUP:
                self._print(self.ctx.catchup_for(self.kind, self.person.id))
            elif line:
                self._accept(line)
                if scripted and self.settle is not None:
                    await self.settle()
        if scripted and self.settle is not None:
            await self.settle()
            leftovers = self.leftovers() if self.leftovers is not None else ""
            if leftovers:
                self._print(leftovers)
        self.closed.set()

    def _accept(self, line: str) -> None:
        self.ctx.accept(
            Inbound(
                channel=self.kind,
                message_id=uuid.uuid4().hex,
                conversation=CONVERSATION,
                sender=self.person,
                text=line,
                reply_to=Target("terminal"),
            )
        )

    def _print(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False


def _start_reader(
    stdin: TextIO, lines: asyncio.Queue[str | None], loop: asyncio.AbstractEventLoop
) -> None:
    source = getattr(stdin, "buffer", None)  # bytes, so a stray byte cannot end the chat

    def pump() -> None:
        try:
            for raw in source if source is not None else stdin:
                text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                _hand(loop, lines, text)
        except (OSError, ValueError):  # stdin closed under us: treat as its end
            pass
        _hand(loop, lines, None)

    threading.Thread(target=pump, name="terminal-stdin", daemon=True).start()


def _hand(
    loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None], line: str | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: the chat has ended
        loop.call_soon_threadsafe(lines.put_nowait, line)


def build(settings: Settings, ctx: ChannelContext) -> TerminalChannel:
    return TerminalChannel(ctx, settings)
