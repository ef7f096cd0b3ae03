"""Gated tool calls on the agents' side: ask, wait (parked), then run exactly once.

A call matching a server's `approval` globs is not run: the gate returns a request
the agent loop writes in its checkpoint (the conversation with the tool_use, the
approval row, the message asking a person), then the agent waits on the desk
(bot/approvals/desk.py) for the decision. The same tool_use then gets its tool_result:
the tool's own output when approved, an error "denied by <who>: <reason>" when not.
The request records who asked (the person whose message the step handles, and their
platform id: they may not approve it themselves unless they are a listed approver) and,
for a worker, everyone who spoke to it since it started (neither may they), keeps the arguments
in the tool's schema order, and attaches them in full when a value is too long to show.

Exactly once, fail closed: the decision is a guarded UPDATE before anything runs; an
approved call is claimed (`approved -> running`, committed) before it is sent, so a
second decision, a redelivery or a restart never sends it again; a call found
`running` after a restart was cut off by the crash: the model is told the outcome
is unknown. Silence past `approval_timeout_seconds` is a denial.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agents.loop.step import Step
from agents.mcp.registry import SEPARATOR, McpRegistry, McpTool
from agents.model.blocks import ToolResultBlock, ToolUseBlock
from agents.services import AgentInfo, Services
from agents.tools.toolbox import ToolResult, result_block
from bot.approvals.desk import request_text
from bot.approvals.text import arguments_file, file_name, needs_file, ordered, timeout_reason
from bot.core.bus import Mail
from bot.core.messages import Attachment, BusMessage, Outbound, Target
from bot.core.names import who
from bot.core.redact import args_digest
from bot.inbox.scope import Crossing
from bot.store.approvals import ApprovalRow

if TYPE_CHECKING:
    from agents.loop.loop import AgentLoop, Conversation

log = logging.getLogger(__name__)

UNKNOWN = (
    "Error: the outcome of {tool} is unknown: it was approved and started, and Switchboard "
    "restarted before it answered. Check the system itself before calling it again."
)
NOT_OFFERED = "Error: {tool} was approved but its server is not available now; it was not run."
SERVER_WAIT = 30.0
ARGS_DIR = "approvals"  # below the data dir: the arguments files requests attach


@dataclass(slots=True)
class ApprovalAsk:
    """What the gate hands the agent loop to write in its checkpoint."""

    row: ApprovalRow
    request: Outbound


class Approvals:
    def __init__(
        self,
        services: Services,
        registry: McpRegistry,
        via: Target | None,
        timeout: float | None,
    ) -> None:
        self.services = services
        self.registry = registry
        self.via = via
        self.timeout = timeout
        self.desk = services.human.approvals

    # -- asking ------------------------------------------------------------------------
    async def gate(
        self, info: AgentInfo, tool: McpTool, args: dict[str, Any], step: Step
    ) -> ToolResult:
        return self._ask(info.agent_id, tool.spec.name, args, step, schema=tool.spec.schema)

    def cross(
        self, agent: str, tool: str, args: dict[str, Any], step: Step, crossing: Crossing
    ) -> ToolResult:
        """A call reaching outside its conversation (bot/inbox/scope.py) waits for a yes like a
        gated tool; approved, the same tool runs again with the crossing allowed."""
        return self._ask(agent, tool, args, step, crossing)

    def _ask(
        self,
        agent: str,
        tool: str,
        args: dict[str, Any],
        step: Step,
        crossing: Crossing | None = None,
        schema: dict[str, Any] | None = None,
    ) -> ToolResult:
        target = step.human if step.conversation is not None else (self.via or step.human)
        requester, requester_id = requester_of(self.services, step)
        now = time.time()
        row = ApprovalRow(
            id=uuid.uuid4().hex[:12],
            agent=agent,
            conversation=step.conversation or str(target),
            speaker=step.speaker,
            tool=tool,
            args=ordered(args, schema),
            tool_use_id="",
            target=str(target),
            requested_at=now,
            deadline=now + self.timeout if self.timeout else None,
            requester=requester,
            requester_id=requester_id,
        )
        if step.involved:  # none of them decides it unless listed (bot/approvals/desk.py)
            row.held = {"involved": list(step.involved)}
        if crossing is not None:
            row.held = {**row.held, "scope": crossing.resource, "why": crossing.why}
        text = request_text(row)
        request = Outbound(
            step.speaker, target, text, step.conversation,
            meta={"approval_id": row.id, "subject": f"Approval needed: {row.tool}"},
            attachments=self._attached(row),
        )  # fmt: skip
        return ToolResult("", approval=ApprovalAsk(row, request))

    def _attached(self, row: ApprovalRow) -> list[Attachment]:
        """The arguments in full, as a file, when the request cannot show them all."""
        if not needs_file(row):
            return []
        data = arguments_file(row.args)
        relative = f"{ARGS_DIR}/{row.id}-arguments.json"
        path = self.services.data_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return [Attachment(file_name(row), "application/json", len(data), path=relative)]

    def hold(
        self,
        node: AgentLoop,
        conv: Conversation,
        call: ToolUseBlock,
        ask: ApprovalAsk,
        results: list[ToolResultBlock],
        later: list[Mail],
    ) -> str:
        """Checkpoint the step with the request; the approval's id."""
        row = ask.row
        row.tool_use_id = call["id"]
        row.held = {
            **row.held,
            "key": conv.key,
            "results": results,
            "later": [mail.msg.to_json() for mail in later],
        }
        node.effects.consumed.extend(mail.id for mail in later)
        node.checkpoint(conv, lambda: self.desk.request(row, ask.request))
        return row.id

    # -- settling ----------------------------------------------------------------------
    async def settle(self, node: AgentLoop, conv: Conversation, approval_id: str) -> None:
        """Wait for the decision, run the call if approved, give the model its result."""
        row, result = await self._outcome(approval_id, node, conv)
        block = result_block(row.tool_use_id, result)
        conv.add_blocks([*row.held.get("results", []), block])
        held = [Mail(0, BusMessage.from_json(raw)) for raw in row.held.get("later", [])]
        node.absorb(conv, held)  # what was said while it waited, after the result
        store = self.services.store
        node.checkpoint(conv, lambda: store.approvals.settle(row.id))
        self.desk.forget(row.id)

    async def resume(self, node: AgentLoop, conv: Conversation) -> bool:
        """After a restart: settle a gated call this conversation was waiting on."""
        for row in self.services.store.approvals.unsettled(node.agent_id):
            if row.held.get("key") == conv.key:
                await self.settle(node, conv, row.id)
                return True
        return False

    async def _outcome(
        self, approval_id: str, node: AgentLoop, conv: Conversation
    ) -> tuple[ApprovalRow, ToolResult]:
        store = self.services.store
        while True:
            row = store.approvals.get(approval_id)
            if row is None:
                raise RuntimeError(f"approval {approval_id} vanished from the store")
            if row.status == "pending":
                await self._wait(row)
            elif row.status == "denied":
                return row, ToolResult(denial(row), is_error=True)
            elif row.status == "approved":
                with store.tx():
                    claimed = store.approvals.start(row.id)
                if claimed:
                    return row, await self._run(row, node, conv)
            else:  # running: a crash cut the call off, it may or may not have happened
                return row, ToolResult(UNKNOWN.format(tool=row.tool), is_error=True)

    async def _wait(self, row: ApprovalRow) -> None:
        wake = self.desk.wake(row.id)
        if row.deadline is None:
            await wake.wait()
            return
        try:
            async with asyncio.timeout(max(0.0, row.deadline - time.time())):
                await wake.wait()
        except TimeoutError:
            reason = timeout_reason(self.timeout or 0.0)
            self.desk.decide(row.id, False, "nobody", reason, how="timeout")

    async def _run(self, row: ApprovalRow, node: AgentLoop, conv: Conversation) -> ToolResult:
        started = time.perf_counter()
        if "scope" in row.held:  # a built-in tool whose reach was approved: run it now
            step = replace(node.step(conv), crossing_approved=True)
            return await node.toolbox.call(row.tool, row.args, step)
        tool = await self._offered(row.tool)
        if tool is None:
            result = ToolResult(NOT_OFFERED.format(tool=row.tool), is_error=True)
        else:
            result = await self.registry.call(tool, row.args)
        self.services.events.emit(
            "tool.called", row.agent, tool=row.tool, approval_id=row.id,
            ms=round((time.perf_counter() - started) * 1000, 2), ok=not result.is_error,
            error=result.text[:300] if result.is_error else None,
            conversation=row.conversation, person=row.requester, person_id=row.requester_id,
            args_digest=args_digest(row.args), outcome="error" if result.is_error else "ok",
        )  # fmt: skip
        return result

    async def _offered(self, name: str) -> McpTool | None:
        """The tool, waiting a little for its server after a restart."""
        client = self.registry.clients.get(name.split(SEPARATOR, 1)[0])
        if name not in self.registry.offered and client is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(client.connected.wait(), SERVER_WAIT)
        return self.registry.offered.get(name)


def requester_of(services: Services, step: Step) -> tuple[str | None, str | None]:
    """Who asks for a step's call: the person whose message it handles, else the person
    who spoke last in its conversation (a trigger's step there), else nobody."""
    if step.person is not None or step.person_id is not None:
        return step.person, step.person_id
    people = services.human.people
    asker = people.speaker_of(step.conversation)
    return (asker.name if asker else None), people.speaker_id_of(step.conversation)


def denial(row: ApprovalRow) -> str:
    """The error the model gets for a denied call (a timeout says so)."""
    if row.how == "timeout":
        return f"Error: {row.reason}"
    reason = f": {row.reason}" if row.reason else ""
    return f"Error: denied by {who(row.decided_by, row.decider_id)}{reason}"
