"""A person's `stop`: taken off the bus before any agent reads it as a message.

`stop` alone in a conversation ends the coordinator's running turn there (at its next
yield point; the model call in flight is cancelled), `@Alice stop` stops the worker
Alice. Either way the mail is consumed here and a short acknowledgement is posted;
no model ever sees the word. Slack's stop button arrives as the same `stop`
(channels/slack/events.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from agents.loop.turns import CLOSED, calls_of, close
from agents.model.blocks import blocks_of
from agents.tools.toolbox import ToolResult, result_block
from bot.core.bus import Mail
from bot.core.messages import COORDINATOR, FROM_PERSON, STOP, Outbound, Target
from bot.core.notices import NOTHING_TO_STOP, SYSTEM_SPEAKER

if TYPE_CHECKING:
    from agents.loop.loop import Conversation
    from agents.team.coordinator import Coordinator
    from agents.team.team import Team


class Stopper:
    """The bus catcher (bot/core/bus.py) that turns a person's `stop` into a stop."""

    def __init__(self, coordinator: Coordinator, team: Team) -> None:
        self.coordinator = coordinator
        self.team = team
        self.services = coordinator.services
        self._stopping: set[asyncio.Task[str]] = set()

    def __call__(self, mail: Mail) -> bool:
        msg = mail.msg
        if msg.kind not in FROM_PERSON or not msg.meta.get(STOP):  # the router decided
            return False
        key = msg.conversation or ""
        reply_to = str(msg.meta.get("reply_to") or "")
        if msg.recipient == COORDINATOR:
            stopped = self.coordinator.stop_turn(key)
        else:
            stopped = self._stop_worker(msg.recipient, reply_to, key)
        self.services.store.consume_mail([mail.id])
        if not stopped:
            self._say(reply_to, key, NOTHING_TO_STOP)
        return True

    def _stop_worker(self, worker_id: str, reply_to: str, key: str) -> bool:
        worker = self.team.workers.get(worker_id)
        if worker is None:
            return False
        task = asyncio.create_task(self.team.stop(worker.row.name))
        self._stopping.add(task)

        def done(task: asyncio.Task[str]) -> None:
            self._stopping.discard(task)
            if not task.cancelled() and task.exception() is None:
                self._say(reply_to, key, task.result())  # "Worker Alice stopped."

        task.add_done_callback(done)
        return True

    def _say(self, reply_to: str, key: str, text: str) -> None:
        if reply_to:
            target = Target.parse(reply_to)
            self.services.human.say(Outbound(SYSTEM_SPEAKER, target, text, key, kind="notice"))


class TurnStopped(Exception):
    """Raised at a yield point of a turn a person stopped."""


STOPPED_NOTE = CLOSED + "the person ended this turn before it was done.]"
INTERRUPTED = "Interrupted: the person said stop (this call may have run)."


def close_turn(conv: Conversation) -> None:
    """Leave a stopped turn's conversation as the API accepts it and as a finished turn
    (so a restart does not resume it): every tool call answered, a runtime note last."""
    last = conv.messages[-1] if conv.messages else None
    if last is not None and last["role"] == "assistant":
        uses = calls_of(blocks_of(last["content"]))
        conv.add_blocks(
            [result_block(u["id"], ToolResult(INTERRUPTED, is_error=True)) for u in uses]
        )
    if conv.awaits_model:
        close(conv.messages, STOPPED_NOTE)
