"""The scope check in front of every tool call that reaches a place (bot/inbox/scope.py).

`ScopeGuard.check(tool, args, step)` runs before a tool's handler (the `Toolbox` calls
it). It reads what the call reaches from the arguments the contract names: a file path
(`read_file`, `list_files`, `files` of `send_message` / `publish`), a channel to read
(`read_channel` target), a place to send to (`schedule` deliver_to, `ask_human`
via), or every conversation's journal (`read_activity`, open only to the operator's
own work: a config trigger's turn, never a person's conversation, known or not).
Within scope it returns None and the tool runs. A crossing returns the tool's result
instead: an approval request through the gated-tool flow (agents/tools/approvals.py),
whose approval runs the same call again with `Step.crossing_approved`, or a refusal
under `SWITCHBOARD_CROSS_SCOPE=deny`. A tool that parks the agent (`ask_human`) cannot
run inside the approval's settling: its approval is a grant for that tool alone, and
the model is told to call it again. Tools never know about scope.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from agents.loop.step import Step
from agents.services import AgentInfo, Services
from agents.tools.files import SHARED, workspace_for
from agents.tools.toolbox import ToolResult
from bot.core.messages import Target, TargetError
from bot.core.redact import args_digest
from bot.inbox.scope import Asker, Crossing, Scope

#: tool -> (argument, what it is): `path`/`files` read a file, `read` a channel, `send` a target
REACH: dict[str, tuple[tuple[str, str], ...]] = {
    "read_file": (("path", "path"),),
    "list_files": (("path", "listing"),),
    "send_message": (("files", "files"),),
    "publish": (("files", "files"),),
    "read_channel": (("target", "read"),),
    "schedule": (("deliver_to", "send"),),
    "ask_human": (("via", "send"),),
    "read_activity": (("since", "activity"),),
}
#: what `read_activity` reaches: the journal of every conversation
EVERY_CONVERSATION = Crossing(
    "every conversation's messages (read_activity)", "it shows other conversations' messages"
)
#: tools whose call parks the agent: an approval is granted, and the model calls again
PARKING = frozenset({"ask_human"})
GRANTED = (
    "Approved by a person: {tool} may now reach {resource}. Call {tool} again with the "
    "same arguments."
)
DENIED = (
    "Error: refused: {why}, and this conversation may not reach {resource} "
    "(SWITCHBOARD_CROSS_SCOPE=deny). Work with this conversation's own files and places."
)


class ScopeGuard:
    """The scope check for one agent (its id names it in approvals and events)."""

    def __init__(self, services: Services, scope: Scope, info: AgentInfo) -> None:
        self.services = services
        self.scope = scope
        self.info = info

    async def check(self, tool: str, args: dict[str, Any], step: Step) -> ToolResult | None:
        reach = REACH.get(tool)
        if not reach:
            return None
        crossing = await self._crossing(reach, args, step)
        if crossing is None:
            return None
        asker = self._asker(step)
        grant = (step.conversation, tool, crossing.resource, args_digest(args))
        if step.crossing_approved and tool in PARKING:
            self.scope.grant(*grant)
            return ToolResult(GRANTED.format(tool=tool, resource=crossing.resource))
        if step.crossing_approved or (tool in PARKING and self.scope.granted(*grant)):
            self.scope.crossed(self.info.agent_id, asker, tool, crossing, "allowed")
            return None
        outcome = self.scope.outcome(approved=False)
        self.scope.crossed(self.info.agent_id, asker, tool, crossing, outcome)
        if outcome == "denied":
            text = DENIED.format(why=crossing.why, resource=crossing.resource)
            return ToolResult(text, is_error=True)
        approvals = self.services.approvals
        result: ToolResult = approvals.cross(self.info.agent_id, tool, args, step, crossing)
        return result

    async def _crossing(
        self, reach: tuple[tuple[str, str], ...], args: dict[str, Any], step: Step
    ) -> Crossing | None:
        for name, kind in reach:
            value = args.get(name)
            if not value:
                continue
            found = await self._one(kind, value, step)
            if found is not None:
                return found
        return None

    async def _one(self, kind: str, value: Any, step: Step) -> Crossing | None:
        if kind == "activity":  # open to the operator's own triggers only, never to a
            # person's conversation, even one whose person is not known (fail closed)
            return None if self._asker(step).operator else EVERY_CONVERSATION
        if kind in ("path", "listing"):
            return self._path(str(value), step, listing=kind == "listing")
        if kind == "files":
            crossings = (self._path(str(v), step) for v in value)
            return next((c for c in crossings if c is not None), None)
        try:
            target = Target.parse(str(value))
        except TargetError:
            return None  # the tool itself says what is wrong with it
        here = step.human if step.conversation is not None else None
        if kind == "read":
            return await self.scope.read(self._asker(step), target, here)
        return await self.scope.send(self._asker(step), target, here)

    def _path(self, raw: str, step: Step, listing: bool = False) -> Crossing | None:
        parts = PurePosixPath(raw.strip()).parts
        if not parts or parts[0] not in SHARED or ".." in parts:
            return None  # the agent's own workspace, or a path the tool refuses itself
        if listing and len(parts) <= 2 and parts[0] == "workspaces":
            return None  # the listing shows only this conversation's own (files_tools)
        if listing and len(parts) == 1:
            return None
        asker = self._asker(step, with_workspaces=parts[0] == "workspaces")
        return self.scope.path(asker, "/".join(parts))

    def _asker(self, step: Step, with_workspaces: bool = False) -> Asker:
        spaces = []
        if with_workspaces:
            spaces = workspaces_of(self.services, step.conversation, step.workspace)
        return self.scope.asker(step.conversation, spaces)


def workspaces_of(services: Services, conversation: str | None, own: str | None) -> list[str]:
    """The workspaces of a conversation: its coordinator's and those of the workers
    spawned from it, and the agent's own."""
    mine = [own] if own else []
    if conversation is None:
        return mine
    workers = [
        workspace_for("workers", f"{w.id}-{int(w.created_at * 1000)}")
        for w in services.store.agents.workers()
        if w.origin_conversation == conversation
    ]
    return [*mine, workspace_for("coordinator", conversation), *workers]


def listing_filter(services: Services, scope: Scope) -> Callable[[AgentInfo, str], bool]:
    """What a listing of a shared area shows an agent: its conversation's own files."""

    def visible(info: AgentInfo, shown: str) -> bool:
        spaces: list[str] = []
        if shown.startswith("workspaces/"):
            spaces = workspaces_of(services, info.conversation, info.workspace)
        return scope.path(scope.asker(info.conversation, spaces), shown) is None

    return visible
