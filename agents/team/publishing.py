"""What a worker's task sends back: its result (to the coordinator conversation it was
spawned from, its files to the place the work started), a suggestion, and a runtime
report (to the coordinator and the person). Each lands in the step's effects, so it
leaves with the step's checkpoint.
"""

from __future__ import annotations

from agents.loop.step import Effects
from agents.services import Services
from bot.core.messages import COORDINATOR, Attachment, BusMessage, Outbound, Target
from bot.core.notices import SHOWN, SYSTEM_SPEAKER
from bot.store.core import WorkerRow


def publish(
    services: Services,
    row: WorkerRow,
    human: Target,
    effects: Effects,
    result: str,
    files: list[Attachment] | None = None,
) -> None:
    """The task's result, for the coordinator to relay; `human`: where it started."""
    if files:  # they go where the work started, whoever relays the result
        names = ", ".join(f.name for f in files)
        effects.outbound.append(
            Outbound(
                row.name,
                human,
                f"Files from my result: {names}",
                row.origin_conversation,
                attachments=files,
            )
        )
    effects.mail.append(
        BusMessage(
            row.name,
            COORDINATOR,
            result,
            kind="result",
            conversation=row.origin_conversation,
            # where the coordinator answers when this conversation has no target yet
            # (a worker a trigger started): the worker's own target
            meta={"worker": row.id, "reply_to": row.origin_target},
            attachments=list(files or []),
        )
    )
    services.events.emit("worker.completed", row.id, result=result[:2000])
    if services.memory is not None:
        services.memory.published(row.id, row.task, result)


def suggestion(row: WorkerRow, text: str) -> BusMessage:
    return BusMessage(
        row.name, COORDINATOR, text, kind="suggestion", conversation=row.origin_conversation
    )


def notice(row: WorkerRow, text: str, shown: bool = True) -> BusMessage:
    """A runtime fact about the task, for the coordinator; `shown`: the person reads it
    too, so the coordinator only learns it (never says it again)."""
    return BusMessage(
        SYSTEM_SPEAKER,
        COORDINATOR,
        text,
        kind="notice",
        conversation=row.origin_conversation,
        meta={SHOWN: shown},
    )


def report(row: WorkerRow, human: Target, effects: Effects, text: str) -> None:
    """Tell the coordinator and the person of the origin conversation (at `human`)."""
    effects.mail.append(notice(row, text))
    effects.outbound.append(
        Outbound(SYSTEM_SPEAKER, human, text, row.origin_conversation, kind="notice")
    )
