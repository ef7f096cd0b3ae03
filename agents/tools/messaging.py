"""`send_message(to, content)`, shared by the coordinator and workers.

`to` is `human` (the person of the speaker's conversation), `coordinator`, a
worker's name, or `*` (everyone, the person included); the description says what
each means for the role that has the tool. A worker is one of the speaker's own
conversation (spawned from it): another conversation's worker is not reached, as a
person's `@Name` would not reach it (bot/inbox/places.py). Messages are queued in the
speaker's current step and land with its checkpoint.
"""

from __future__ import annotations

from typing import Any, Literal

from agents.loop.step import Step
from agents.services import Services
from agents.tools.files import FILES_ARG, step_workspace
from agents.tools.toolbox import STR, Tool, ToolError, ToolSpec, arg, schema
from bot.core.messages import COORDINATOR, HUMAN, BusMessage, Outbound


def _spec(description: str, to: str) -> ToolSpec:
    return ToolSpec(
        "send_message",
        description,
        schema(
            {"to": arg(STR, to), "content": arg(STR, "Markdown")},
            {"files": FILES_ARG},
        ),
    )


SEND_MESSAGE = {
    "coordinator": _spec(
        "Message a worker by name, or '*' (every worker and the person). Your text is your "
        "reply to this conversation's person: never send_message(to='human') to answer.",
        "a worker's name; '*': all workers and the person; 'human': an extra note",
    ),
    "worker": _spec(
        "Send a message; it does not end your task. 'human': a post in your task's "
        "conversation (progress, partial results). To answer someone who spoke to you, just "
        "reply; to finish, publish.",
        "'human', 'coordinator', a worker's name, or '*' (all)",
    ),
}


def send_message_tool(services: Services, role: Literal["coordinator", "worker"]) -> Tool:
    async def handler(args: dict[str, Any], step: Step) -> str:
        to, content = args["to"].strip(), args["content"]
        if not content.strip():
            raise ToolError("content is empty")
        recipients = _recipients(services, to, step.speaker_id, step.conversation)
        files = step_workspace(services, step).attachments(args.get("files") or [])
        for recipient in recipients:
            if recipient == HUMAN:
                step.effects.outbound.append(
                    Outbound(
                        step.speaker, step.human, content, step.conversation, attachments=files
                    )
                )
            else:
                step.effects.mail.append(
                    BusMessage(
                        step.speaker,
                        recipient,
                        content,
                        conversation=step.conversation,
                        attachments=files,
                    )
                )
        attached = f" with {len(files)} file(s)" if files else ""
        return f"Sent to {', '.join(recipients)}{attached}."

    return Tool(SEND_MESSAGE[role], step_handler=handler)


def _recipients(
    services: Services, to: str, speaker_id: str, conversation: str | None
) -> list[str]:
    directory = services.human.directory
    workers = [w for w, o in directory.origins.items() if o.conversation == conversation]
    name = to.lower().lstrip("@")
    if name in ("*", "all", "everyone"):
        return [HUMAN, *(n for n in [COORDINATOR, *workers] if n != speaker_id)]
    if name in (HUMAN, "person", "user"):
        return [HUMAN]
    if name == COORDINATOR or name in workers:
        if name == speaker_id:
            raise ToolError("you cannot send a message to yourself")
        return [name]
    if name in directory.workers:
        raise ToolError(f"{to} works for another conversation: message only this one's workers")
    known = ", ".join(["human", "coordinator", *directory.names(workers), "*"])
    raise ToolError(f"unknown recipient {to!r}. Use one of: {known}.")
