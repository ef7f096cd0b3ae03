"""The terminal channel: one person talking to Switchboard on stdin/stdout.

Each line is a message (routed like any other: `@Alice ...` reaches a worker, a plain
line answers the open question of a worker that asked here). Output shows who
speaks. `/status` prints the status tables, `/quit` (or end of input) leaves.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
import uuid
from typing import TextIO

from bot.human import HumanNode
from bot.messages import DeliveryReceipt, Inbound, Outbound, Sender, Target
from bot.status import render_status
from config.settings import Settings

CONVERSATION = "terminal"
BANNER = (
    "Switchboard: you are talking to the coordinator. "
    "@Name talks to a worker; /status shows what runs; /quit leaves."
)


class TerminalChannel:
    kind = "terminal"
    pace_seconds = 0.0

    def __init__(
        self,
        human: HumanNode,
        settings: Settings,
        stdin: TextIO = sys.stdin,
        stdout: TextIO = sys.stdout,
    ) -> None:
        self.human = human
        self.settings = settings
        self.stdin = stdin
        self.stdout = stdout
        self.person = Sender(getpass.getuser(), getpass.getuser())
        self.closed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._print(BANNER)
        self.human.store.set_health(self.kind, "connected", "stdin/stdout")
        self._reader = asyncio.create_task(self._read())

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        self.human.store.set_health(self.kind, "stopped")

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        if msg.kind == "question":
            self._print(
                f"[{msg.agent} asks] {msg.text}\n  (answer with a plain line, or @{msg.agent} ...)"
            )
        else:
            self._print(f"[{msg.agent}] {msg.text}")
        return DeliveryReceipt(platform_id=msg.id)

    async def _read(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.stdin)
        while True:
            raw = await reader.readline()
            if not raw:
                break
            line = raw.decode("utf-8", errors="replace").strip()
            if line in ("/quit", "/exit"):
                break
            if line == "/status":
                self._print(render_status(self.human.store))
            elif line:
                self._accept(line)
        self.closed.set()

    def _accept(self, line: str) -> None:
        self.human.accept(
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


def build(settings: Settings, human: HumanNode) -> TerminalChannel:
    return TerminalChannel(human, settings)
