"""`send_message(to, content)`, shared by the coordinator and workers.

`to` is `human` (the person of the speaker's conversation), `coordinator`, a
worker's name, or `*` (everyone, the person included); the description says what
each means for the role that has the tool. A worker is one of the speaker's own
conversation (spawned from it): another conversation's worker is not reached, as a
person's `@Name` would not reach it (bot/inbox/places.py). Messages are queued in the
speaker's current step and land with its checkpoint.

The coordinator answers for a person when told to ("tell Alice: data center only"): a
message to a worker waiting on a question answers it, and resumes the worker, when the
person of the step may answer it (the question was asked in this conversation, or the
person spoke where it was asked, or is a listed approver); from anyone else it reaches
the worker as information and the worker stays parked.
"""

from __future__ import annotations

from typing import Any, Literal

from agents.loop.step import Step
from agents.services import Services
from agents.tools.files import FILES_ARG, step_workspace
from agents.tools.toolbox import STR, Tool, ToolError, ToolSpec, arg, schema
from bot.core.messages import COORDINATOR, HUMAN, Attachment, BusMessage, Outbound
from bot.core.names import platform_id
from bot.store.core import QuestionRow


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
        notes: list[str] = []
        for recipient in recipients:
            if recipient == HUMAN:
                step.effects.outbound.append(
                    Outbound(
                        step.speaker, step.human, content, step.conversation, attachments=files
                    )
                )
            elif role == "coordinator" and (question := _answerable(services, recipient, step)):
                step.effects.mail.append(_answer(step, recipient, question, content, files))
                name = services.human.directory.workers.get(recipient, recipient)
                notes.append(f"it answers {name}'s open question for {step.person}: {name} goes on")
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
        said = f" ({'; '.join(notes)})" if notes else ""
        return f"Sent to {', '.join(recipients)}{attached}{said}."

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


def _answerable(services: Services, worker: str, step: Step) -> QuestionRow | None:
    """The open question of `worker` the person of this step may answer, if any: one
    asked here, or of them (its target is one of their ids), or where they spoke; or
    any, for a listed approver."""
    questions = services.human.directory.of_worker(worker)
    if not questions or step.person is None:
        return None
    question = questions[-1]
    if question.conversation is not None and question.conversation == step.conversation:
        return question  # asked in this very conversation: a reply here would answer it
    people = services.human.people
    idents = {step.person_id} if step.person_id else set()
    idents |= {platform_id(kind, ident) for kind, ident in people.ids_of(step.person)}
    if question.target.lower() in idents:
        return question  # the person it was asked of
    if question.conversation in people.conversations_of(idents):
        return question  # the person spoke where it was asked
    approvers = {a.strip().lower() for a in services.human.approvals.approvers if a.strip()}
    if approvers & {step.person.lower(), *idents}:
        return question
    return None


def _answer(
    step: Step, worker: str, question: QuestionRow, content: str, files: list[Attachment]
) -> BusMessage:
    """The person's answer, relayed by the coordinator, as the human node would hand it."""
    person = str(step.person)
    return BusMessage(
        HUMAN,
        worker,
        content,
        kind="answer",
        conversation=step.conversation,
        question_id=question.id,
        meta={
            "sender": person,
            "person": person,
            "person_id": step.person_id,
            "reply_to": str(step.human),
            "relayed_by": COORDINATOR,
        },
        attachments=files,
    )
