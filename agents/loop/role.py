"""An agent loop's role: who thinks in it, handed to the loop when it is made.

The loop (agents/loop/loop.py) thinks and acts the same way for every agent; its role
says what differs: the system prompt it thinks with, and the step (who speaks, for
whom, where) its tool calls act in. A role with a task of its own (a worker's) also
says what becomes of that task when a call parks it until a person answers, or ends
it (`Task`). The coordinator's role has no task (`task` is None): none of its tools
parks or ends anything, and a call that tried would be refused (agents/loop/loop.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agents.loop.conversation import Conversation
    from agents.loop.step import Effects, Step
    from agents.model.blocks import ToolResultBlock
    from bot.core.bus import Mail


class Task(Protocol):
    """What a call that parks or ends a task does to it."""

    def park(
        self,
        conv: Conversation,
        call: tuple[str, str],
        results: list[ToolResultBlock],
        later: list[Mail],
    ) -> None:
        """`call` (tool_use id, question id) waits for a person's answer: the step's other
        results and the mail taken at its yield points wait with it."""
        ...

    def unread(self, mail: list[Mail]) -> None:
        """A call ended the task: mail taken at the step's yield points goes back."""
        ...


class Role(Protocol):
    """Who a loop thinks as: its prompt and the context its tool calls act in."""

    @property
    def task(self) -> Task | None:
        """Its own task, which a call may park or end; None: it has none."""
        ...

    def system_prompt(self, conv: Conversation) -> str: ...

    def step(self, conv: Conversation, effects: Effects) -> Step:
        """The context a tool call of this step acts in, collecting into `effects`."""
        ...
