"""A worker's task parked for a person's answer: `ask_human` asks, the step's other
results and the mail taken meanwhile wait in the worker's row (so a restart resumes
with exactly its answer), and the answer, when it comes, is the call's result.

`Parking` is the worker's `Task` (agents/loop/role.py): the loop hands it a call that
parks the task, and mail a call that ended it gives back.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from agents.loop.step import Step
from agents.loop.transcript import answer_text, render
from agents.model.blocks import ToolResultBlock, results_from
from agents.tools.toolbox import ToolError, ToolResult, result_block
from bot.core.bus import Mail
from bot.core.messages import BusMessage, Outbound, Target, TargetError
from bot.store.core import ParkedState, QuestionRow

if TYPE_CHECKING:
    from agents.loop.conversation import Conversation
    from agents.team.worker import Worker

PENDING = "(waiting for the person's answer)"


class Parking:
    """What becomes of one worker's task when a call parks it or ends it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._question: QuestionRow | None = None  # asked in this step, opened when parked

    async def ask_human(self, args: dict[str, Any], step: Step) -> ToolResult:
        """The `ask_human` tool: the question goes out with the step, the task parks."""
        row = self.worker.row
        try:
            target = Target.parse(args["via"]) if args.get("via") else step.human
        except TargetError as exc:
            raise ToolError(str(exc)) from exc
        question_id = uuid.uuid4().hex[:12]
        conversation = row.origin_conversation if not args.get("via") else str(target)
        self._question = QuestionRow(
            id=question_id,
            worker=row.id,
            question=args["question"],
            target=str(target),
            conversation=conversation,
            refs=[],
            status="open",
            asked_at=time.time(),
        )
        step.effects.outbound.append(
            Outbound(
                row.name,
                target,
                args["question"],
                conversation,
                kind="question",
                question_id=question_id,
                meta={"subject": f"{row.name} asks: {args['question']}"},
            )
        )
        return ToolResult("", park=question_id)

    def park(
        self,
        conv: Conversation,
        call: tuple[str, str],
        results: list[ToolResultBlock],
        later: list[Mail],
    ) -> None:
        """The task waits for a person's answer, its step's results and mail kept in the
        store (the worker's row) until it comes, its question opened with them."""
        worker, row = self.worker, self.worker.row
        tool_use_id, question_id = call
        parked = row.parked = ParkedState(question_id=question_id, tool_use_id=tool_use_id)
        pending = result_block(tool_use_id, ToolResult(PENDING))
        parked.results = [*results, pending]
        parked.later = [mail.msg.to_json() for mail in later]
        worker.effects.consumed.extend(mail.id for mail in later)
        row.status = "parked"
        question = self._question
        self._question = None

        def open_question() -> None:
            if question is not None:
                worker.services.human.open_question(question)

        worker.checkpoint(conv, open_question)
        worker.services.events.emit(
            "worker.parked", row.id, question_id=question.id if question else None
        )

    def unread(self, mail: list[Mail]) -> None:
        for item in mail:
            self.worker.mailbox.put(item)  # the team redirects them when this worker is gone

    async def wait(self, conv: Conversation, parked: ParkedState) -> None:
        """Until the answer comes; other mail waits for the resume."""
        held: list[Mail] = []
        while True:
            for mail in await self.worker.mailbox.wait():
                # only an answer (a reply in the question's thread or to its mail, or
                # `@Name ...`) resumes; a broadcast or other mail waits for the resume
                if mail.msg.kind == "answer" and (
                    mail.msg.question_id in (None, parked.question_id)
                ):
                    self._resume(conv, parked, mail, held)
                    return
                held.append(mail)

    def _resume(
        self, conv: Conversation, parked: ParkedState, answer: Mail, held: list[Mail]
    ) -> None:
        worker, row = self.worker, self.worker.row
        text = answer_text(answer.msg)
        results: list[ToolResultBlock] = [
            {**r, "content": text} if r["tool_use_id"] == parked.tool_use_id else r
            for r in results_from(parked.results)
        ]
        conv.add_blocks(results)
        worker.heard(answer.msg)  # first: a preference said in the answer shows in its profile
        conv.add_clock(worker.now([answer]))
        person = answer.msg.meta.get("person")
        worker.add_context(conv, [str(person)] if person else [])
        for raw in parked.later:
            later = BusMessage.from_json(raw)
            conv.add_text(render(Mail(0, later)))
            worker.heard(later)
        worker.effects.consumed.append(answer.id)
        worker.absorb(conv, held)
        question_id = parked.question_id
        row.parked = None
        row.status = "running"
        human = worker.services.human
        worker.checkpoint(
            conv, lambda: human.close_question(question_id, "answered", answer.msg.text)
        )
        worker.services.events.emit("worker.resumed", row.id, question_id=question_id)
