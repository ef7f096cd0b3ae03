"""A worker: one task, one LLM conversation, its own asyncio task.

Tools: `send_message`, `ask_human` (parks the worker until a person answers),
`publish` (ends the task; the result goes to the coordinator conversation the
worker was spawned from) and `suggest_next`, plus the shared factories' tools.
A parked worker's state (the open question, the tool results of its turn) is in
the store, so it resumes with exactly its answer after any restart.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from agents.loop.loop import AgentLoop, Conversation, Outcome
from agents.loop.prompts import system_prompt
from agents.loop.step import Effects, Step, asker_of
from agents.loop.transcript import answer_text, render
from agents.loop.turns import ANSWERED, CONTINUED, REMINDER, last_words, reminded, stop_of
from agents.model.blocks import ToolResultBlock, results_from
from agents.model.llm import LLMResponse
from agents.services import AgentInfo, Services
from agents.team import asked, findings
from agents.tools.files import workspace_for, workspace_of
from agents.tools.messaging import send_message_tool
from agents.tools.toolbox import Tool, Toolbox, ToolError, ToolResult, result_block
from agents.tools.worker import ASK_HUMAN, PUBLISH, SUGGEST_NEXT, WORKER_ROLE
from bot.core.bus import Mail, Mailbox
from bot.core.messages import (
    COORDINATOR,
    FROM_PERSON,
    Attachment,
    BusMessage,
    Outbound,
    Target,
    TargetError,
)
from bot.core.notices import (
    SHOWN,
    SYSTEM_SPEAKER,
    TERMINAL,
    where_to,
    worker_turn_limit,
    working_on,
)
from bot.store.core import ParkedState, QuestionRow, WorkerRow, WorkerStatus

log = logging.getLogger(__name__)

TASK_KEY = "task"
#: what the coordinator hears of a task the model declined (the person was told why)
DECLINED = "{name} could not do this task: the model declined it."
PENDING = "(waiting for the person's answer)"


class Worker(AgentLoop):
    """`on_finished(worker, status)` is called once its task is over (done or failed)."""

    def __init__(
        self,
        services: Services,
        row: WorkerRow,
        on_finished: Callable[[Worker, WorkerStatus], None],
    ) -> None:
        self.row = row
        self.on_finished = on_finished
        task = f"{row.id}-{int(row.created_at * 1000)}"  # a reused name: a new workspace
        self.info = AgentInfo(
            row.id, "worker", row.origin_conversation, workspace_for("workers", task)
        )
        self.workspace = workspace_of(services.data_dir, self.info, services.limits.file_max_bytes)
        self.max_turns = services.limits.max_turns
        self.mailbox: Mailbox = services.bus.register(row.id)
        self._question: QuestionRow | None = None
        # whose profile the prompt shows: who asked for the task, then who last spoke to it
        speaker = services.human.people.speaker_of(row.origin_conversation)
        self.person = speaker.name if speaker is not None else None
        self.asked_by = self.person  # who asked for the task, as the prompt states it
        self.people = asked.WorkerPeople.load(services.store, row.id)  # its requesters (asked.py)
        self._asker: BusMessage | None = None  # a person's message taken in since the last turn
        self._answering: BusMessage | None = None  # ... the one the last response answers
        self._posted = False  # the last response's text went to that person
        self._cut = False  # the last response was cut or paused: the next one goes on with it
        super().__init__(services, row.id)
        self.toolbox = Toolbox(
            self._tools(), services.sources_for(self.info), services.guard(self.info)
        )

    def _tools(self) -> list[Tool]:
        tools = [
            send_message_tool(self.services, "worker"),
            Tool(ASK_HUMAN, step_handler=self._ask_human),
            Tool(PUBLISH, step_handler=self._publish),
            Tool(SUGGEST_NEXT, step_handler=self._suggest),
        ]
        for factory in self.services.tool_factories:
            tools.extend(factory(self.info))
        return tools

    def system_prompt(self, conv: Conversation) -> str:
        return system_prompt(self.services, self.info, conv, self._role())

    def _role(self) -> str:
        """Who asked, where, and the limits: fixed for the task (the prompt stays cached)."""
        behalf = f" on behalf of {self.asked_by}" if self.asked_by else ""
        where = self.row.origin_target or "no channel (the home target)"
        return (
            f"Your name is {self.row.name}. Your task (from the coordinator{behalf}, asked in "
            f"{where}):\n{self.row.task}\n\n{WORKER_ROLE.format(turns=self.max_turns)}"
        )

    def heard(self, msg: BusMessage) -> None:
        if msg.kind in FROM_PERSON:
            self._asker = msg
            self.people.heard(msg, self.services.human.people)
            if msg.meta.get("person"):
                self.person = msg.meta["person"]
        super().heard(msg)

    def speak(self, conv: Conversation, text: str) -> None:
        """Text written right after a person spoke to this worker answers that person,
        in their conversation, as this worker; other text stays in the task."""
        msg = self._answering
        target = where_to(msg.meta.get("reply_to") if msg else None, home=None)
        if msg is None or target is None:
            return
        self.effects.outbound.append(Outbound(self.row.name, target, text, msg.conversation))
        self._posted = True

    # -- the loop --------------------------------------------------------------------
    async def run(self) -> None:
        conv = self._load()
        await self.resume_approval(conv)
        while True:
            if self.row.parked is not None:
                await self._wait_for_answer(conv, self.row.parked)
            outcome = await self.think(conv, self.mailbox, self.row.turns)
            if not self._settle(conv, outcome):
                return

    def _load(self) -> Conversation:
        conv = Conversation.load(self.services.store, self.row.id, TASK_KEY, self.row.origin_target)
        self._asker = self.services.store.asker_of(self.row.id)  # heard before a restart
        if not conv.messages:
            conv.add_text(self.now(conversation=self.row.origin_conversation))
            conv.add_text(f"Your task: {self.row.task}")
            self.add_context(conv, [self.person] if self.person else [])
        return conv

    def _settle(self, conv: Conversation, outcome: Outcome) -> bool:
        """Act on how thinking ended; False when the worker's task is over."""
        if outcome.kind == "parked":
            return True
        if outcome.kind == "done" and self._goes_on(conv):
            return True
        if outcome.kind == "done":  # a second text-only reply in a row: that is its result
            self._publish_now(last_words(conv.messages) or "(no result)", self.effects)
            outcome = Outcome("ended")
        if outcome.kind == "declined":  # its turn is gone from the context: so is the task
            self._publish_now(DECLINED.format(name=self.row.name), self.effects)
        if outcome.kind == "limit":
            self._report(worker_turn_limit(self.row.name, self.max_turns))
        status: WorkerStatus = "done" if outcome.kind == "ended" else "failed"
        self.row.status = status
        self.checkpoint(conv)
        self.on_finished(self, status)
        return False

    def _goes_on(self, conv: Conversation) -> bool:
        """A text-only reply does not end the task: one that answered a person is followed
        by a note that the task is open; one to nothing new by a reminder, once."""
        if self._posted and self._answering is not None:
            who = self._answering.meta.get("sender") or self._answering.sender
            conv.add_text(ANSWERED.format(who=who))
        elif not reminded(conv.messages):
            conv.add_text(REMINDER)
        else:
            return False
        self.services.events.emit("worker.reminded", self.row.id, answered=self._posted)
        return True

    def on_turn(self, turns: int, response: LLMResponse | None) -> None:
        """A response answers the person heard before it (a cut one's continuation, theirs)."""
        self.row.turns = turns
        if not (self._cut and self._answering is not None):
            self._answering, self._asker = self._asker, None
        self._posted = False
        self._cut = response is not None and stop_of(response.stop_reason) in CONTINUED

    def checkpoint(self, conv: Conversation, extra: Any = None) -> None:
        def write() -> None:
            self.services.store.upsert_worker(self.row)
            pending = self._asker or (self._answering if self._cut else None)
            self.services.store.keep_asker(self.row.id, pending)
            self.people.save(self.services.store, self.row.id)
            if extra is not None:
                extra()

        super().checkpoint(conv, write)

    def unread(self, mail: list[Mail]) -> None:
        for item in mail:
            self.mailbox.put(item)  # the team redirects them when this worker is gone

    # -- parking -----------------------------------------------------------------------
    def park_call(self, tool_use_id: str, question_id: str) -> None:
        self.row.parked = ParkedState(question_id=question_id, tool_use_id=tool_use_id)

    def hold_results(
        self, conv: Conversation, results: list[ToolResultBlock], later: list[Mail]
    ) -> None:
        parked = self.row.parked
        assert parked is not None  # park_call came first
        pending = result_block(parked.tool_use_id, ToolResult(PENDING))
        parked.results = [*results, pending]
        parked.later = [mail.msg.to_json() for mail in later]
        self.effects.consumed.extend(mail.id for mail in later)
        self.row.status = "parked"
        question = self._question
        self._question = None

        def open_question() -> None:
            if question is not None:
                self.services.human.open_question(question)

        self.checkpoint(conv, open_question)
        self.services.events.emit(
            "worker.parked", self.row.id, question_id=question.id if question else None
        )

    async def _wait_for_answer(self, conv: Conversation, parked: ParkedState) -> None:
        held: list[Mail] = []
        while True:
            for mail in await self.mailbox.wait():
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
        text = answer_text(answer.msg)
        results: list[ToolResultBlock] = [
            {**r, "content": text} if r["tool_use_id"] == parked.tool_use_id else r
            for r in results_from(parked.results)
        ]
        conv.add_blocks(results)
        self.heard(answer.msg)  # first: a preference said in the answer shows in its profile
        conv.add_clock(self.now([answer]))
        person = answer.msg.meta.get("person")
        self.add_context(conv, [str(person)] if person else [])
        for raw in parked.later:
            later = BusMessage.from_json(raw)
            conv.add_text(render(Mail(0, later)))
            self.heard(later)
        self.effects.consumed.append(answer.id)
        self.absorb(conv, held)
        question_id = parked.question_id
        self.row.parked = None
        self.row.status = "running"
        self.checkpoint(
            conv,
            lambda: self.services.human.close_question(question_id, "answered", answer.msg.text),
        )
        self.services.events.emit("worker.resumed", self.row.id, question_id=question_id)

    # -- tools -------------------------------------------------------------------------
    def step(self, conv: Conversation) -> Step:
        """A call's requester: the person the response answers, else who asked the task."""
        asker = (asker_of(self._answering) if self._answering else None) or self.people.asked_by
        return Step(
            speaker=self.row.name,
            conversation=self.row.origin_conversation,
            human=self._human_target(),
            effects=self.effects,
            workspace=self.info.workspace,
            conv=conv,
            person=asker[0] if asker else None,
            person_id=asker[1] if asker else None,
            involved=tuple(self.people.spoke),
        )

    def announce(self, conv: Conversation, status: str) -> None:
        """Live progress: shown where the task came from, naming the worker."""
        key, origin = self.row.origin_conversation, self.row.origin_target
        if key and origin:
            said = working_on(self.row.name, status)
            self.services.human.progress.status(key, said, Target.parse(origin))

    def _human_target(self) -> Target:
        return where_to(self.row.origin_target, home=self.services.home) or TERMINAL

    async def _ask_human(self, args: dict[str, Any], step: Step) -> ToolResult:
        try:
            target = Target.parse(args["via"]) if args.get("via") else step.human
        except TargetError as exc:
            raise ToolError(str(exc)) from exc
        question_id = uuid.uuid4().hex[:12]
        conversation = self.row.origin_conversation if not args.get("via") else str(target)
        self._question = QuestionRow(
            id=question_id,
            worker=self.row.id,
            question=args["question"],
            target=str(target),
            conversation=conversation,
            refs=[],
            status="open",
            asked_at=time.time(),
        )
        step.effects.outbound.append(
            Outbound(
                self.row.name,
                target,
                args["question"],
                conversation,
                kind="question",
                question_id=question_id,
                meta={"subject": f"{self.row.name} asks: {args['question']}"},
            )
        )
        return ToolResult("", park=question_id)

    async def _publish(self, args: dict[str, Any], step: Step) -> ToolResult:
        files = self.workspace.attachments(args.get("files") or [])
        result = args["result"] + await findings.share(self.services, self.row, args.get("learned"))
        self._publish_now(result, step.effects, files)
        return ToolResult("Published. Your task is complete.", end=True)

    def _publish_now(
        self, result: str, effects: Effects, files: list[Attachment] | None = None
    ) -> None:
        if files:  # they go where the work started, whoever relays the result
            names = ", ".join(f.name for f in files)
            effects.outbound.append(
                Outbound(
                    self.row.name,
                    self._human_target(),
                    f"Files from my result: {names}",
                    self.row.origin_conversation,
                    attachments=files,
                )
            )
        effects.mail.append(
            BusMessage(
                self.row.name,
                COORDINATOR,
                result,
                kind="result",
                conversation=self.row.origin_conversation,
                # where the coordinator answers when this conversation has no target yet
                # (a worker a trigger started): the worker's own target
                meta={"worker": self.row.id, "reply_to": self.row.origin_target},
                attachments=list(files or []),
            )
        )
        self.services.events.emit("worker.completed", self.row.id, result=result[:2000])
        if self.services.memory is not None:
            self.services.memory.published(self.row.id, self.row.task, result)

    async def _suggest(self, args: dict[str, Any], step: Step) -> str:
        step.effects.mail.append(
            BusMessage(
                self.row.name,
                COORDINATOR,
                args["suggestion"],
                kind="suggestion",
                conversation=self.row.origin_conversation,
            )
        )
        return "Suggestion sent to the coordinator."

    def _report(self, text: str) -> None:
        """Tell the coordinator and the person of the origin conversation."""
        self.effects.mail.append(
            BusMessage(
                SYSTEM_SPEAKER,
                COORDINATOR,
                text,
                kind="notice",
                conversation=self.row.origin_conversation,
                meta={SHOWN: True},  # the person reads it below: the coordinator only learns it
            )
        )
        self.effects.outbound.append(
            Outbound(
                SYSTEM_SPEAKER,
                self._human_target(),
                text,
                self.row.origin_conversation,
                kind="notice",
            )
        )
