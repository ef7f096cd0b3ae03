"""What one step of an agent's loop hands its tool calls: who speaks, in which
conversation, where "the person" is, and the effects the step is collecting.

The node loop builds a `Step` for each tool call (slack_bolt hands a listener its
`say`/`context` the same way), so a tool never reaches back into the agent that
runs it. Effects land in the step's checkpoint transaction, all or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.core.messages import BusMessage, Outbound, Target

if TYPE_CHECKING:
    from agents.loop.conversation import Conversation


@dataclass(slots=True)
class Effects:
    """What a step produced, written in the step's checkpoint transaction."""

    outbound: list[Outbound] = field(default_factory=list)
    mail: list[BusMessage] = field(default_factory=list)
    consumed: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Step:
    """The per-call context of a tool that acts in the agent's step."""

    #: who speaks to people: `coordinator`, or the worker's display name
    speaker: str
    #: the human conversation the step serves (None: none, e.g. a trigger's own)
    conversation: str | None
    #: where `human` is for this step: the conversation's target, else the home target
    human: Target
    effects: Effects
    #: the agent's workspace below <data_dir>/workspaces (agents/tools/files.py)
    workspace: str | None = None
    #: a person approved this call's reach outside its conversation (bot/inbox/scope.py)
    crossing_approved: bool = False
    #: the model's conversation the call was written in: what it had read when it wrote
    #: it (the egress check reads it, agents/tools/egress.py)
    conv: Conversation | None = None

    @property
    def speaker_id(self) -> str:
        return self.speaker.lower()
