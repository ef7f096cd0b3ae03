"""What one step of an agent's loop hands its tool calls: who speaks, in which
conversation, where "the person" is, and the effects the step is collecting.

The agent loop builds a `Step` for each tool call (slack_bolt hands a listener its
`say`/`context` the same way), so a tool never reaches back into the agent that
runs it. Effects land in the step's checkpoint transaction, all or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.core.messages import FROM_PERSON, BusMessage, Outbound, Target
from bot.core.names import platform_id

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
    #: the person whose message the step handles (resolved name, platform id): a gated
    #: call's requester; None: nobody's message (the conversation's last speaker counts)
    person: str | None = None
    person_id: str | None = None
    #: everyone who spoke to the agent since its task started (names and platform ids):
    #: none of them may approve its calls unless listed as an approver
    involved: tuple[str, ...] = ()

    @property
    def speaker_id(self) -> str:
        return self.speaker.lower()


def asker_of(msg: BusMessage) -> tuple[str, str | None] | None:
    """(person, platform id) of a person's message; None for an agent's or a trigger's."""
    if msg.kind not in FROM_PERSON:
        return None
    meta = msg.meta
    sender = str(meta.get("sender_id") or "")
    ident = meta.get("person_id") or (
        platform_id(str(meta["channel"]), sender) if meta.get("channel") and sender else None
    )
    name = meta.get("person") or sender or None
    return (str(name), ident) if name else None
