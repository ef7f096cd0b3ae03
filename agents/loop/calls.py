"""What one tool call leaves in the event log: `tool.called`, with the fields the audit
log keeps (whose conversation, the person asking, a digest of the arguments, the
outcome) and never the arguments themselves. The agent loop calls `record` once per call.
"""

from __future__ import annotations

import time

from agents.loop.step import Step
from agents.model.blocks import ToolUseBlock
from agents.services import Services
from agents.tools.toolbox import ToolResult
from bot.core.redact import args_digest


def outcome(result: ToolResult) -> str:
    """A tool call's outcome as the audit log names it."""
    if result.approval is not None:
        return "approval"
    if result.park is not None:
        return "parked"
    return "error" if result.is_error else "ok"


def record(
    services: Services,
    agent_id: str,
    call: ToolUseBlock,
    step: Step,
    result: ToolResult,
    started: float,
) -> None:
    """Emit `tool.called` for a call that began at `started` (time.perf_counter())."""
    people = services.human.people
    person = people.speaker_of(step.conversation)
    services.events.emit(
        "tool.called",
        agent_id,
        tool=call["name"],
        ms=round((time.perf_counter() - started) * 1000, 2),
        ok=not result.is_error,
        error=result.text[:300] if result.is_error else None,
        parked=result.park is not None or None,
        conversation=step.conversation,
        person=person.name if person is not None else None,
        person_id=people.speaker_id_of(step.conversation),
        args_digest=args_digest(call["input"]),
        outcome=outcome(result),
    )
