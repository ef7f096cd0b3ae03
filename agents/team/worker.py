"""A worker: one task, one LLM conversation, its own asyncio task.

Tools: `send_message`, `ask_human` (parks the worker until a person answers:
agents/team/parking.py), `publish` (ends the task; the result goes to the coordinator
conversation the worker was spawned from: agents/team/publishing.py) and
`suggest_next`, plus the shared factories' tools. Its role (`WorkerRole`) gives the
loop its prompt and the step its calls act in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agents.loop.loop import AgentLoop, Conversation, Outcome
from agents.loop.prompts import system_prompt
from agents.loop.role import Task
from agents.loop.step import Effects, Step, asker_of
from agents.loop.turns import ANSWERED, CONTINUED, REMINDER, last_words, reminded, stop_of
from agents.model.llm import LLMResponse
from agents.services import AgentInfo, Services
from agents.team import asked, findings, publishing
from agents.team.parking import Parking
from agents.tools.files import workspace_for, workspace_of
from agents.tools.messaging import send_message_tool
from agents.tools.toolbox import Tool, Toolbox, ToolResult
from agents.tools.worker import ASK_HUMAN, PUBLISH, SUGGEST_NEXT, WORKER_ROLE
from bot.core.bus import Mailbox
from bot.core.messages import FROM_PERSON, Attachment, BusMessage, Outbound, Target
from bot.core.notices import TERMINAL, where_to, worker_turn_limit, working_on
from bot.store.core import WorkerRow, WorkerStatus

log = logging.getLogger(__name__)

TASK_KEY = "task"
#: what the coordinator hears of a task the model declined (the person was told why)
DECLINED = "{name} could not do this task: the model declined it."


class WorkerRole:
    """A worker's role: its task, fixed in its prompt (which stays cached); its calls act
    for the person its response answers, else for who asked for the task, in the
    conversation the task came from. A call may park its task or end it (`task`)."""

    def __init__(self, services: Services, row: WorkerRow, task: Task) -> None:
        self.services = services
        self.row = row
        self.task = task
        stamp = f"{row.id}-{int(row.created_at * 1000)}"  # a reused name: a new workspace
        self.info = AgentInfo(
            row.id, "worker", row.origin_conversation, workspace_for("workers", stamp)
        )
        speaker = services.human.people.speaker_of(row.origin_conversation)
        self.asked_by = speaker.name if speaker is not None else None  # as the prompt says
        self.people = asked.WorkerPeople.load(services.store, row.id)  # its requesters (asked.py)
        self.answering: BusMessage | None = None  # the person's message the response answers

    def system_prompt(self, conv: Conversation) -> str:
        """Who asked, where, and the limits: fixed for the task (the prompt stays cached)."""
        behalf = f" on behalf of {self.asked_by}" if self.asked_by else ""
        where = self.row.origin_target or "no channel (the home target)"
        turns = self.services.limits.max_turns
        role = (
            f"Your name is {self.row.name}. Your task (from the coordinator{behalf}, asked in "
            f"{where}):\n{self.row.task}\n\n{WORKER_ROLE.format(turns=turns)}"
        )
        return system_prompt(self.services, self.info, conv, role)

    def step(self, conv: Conversation, effects: Effects) -> Step:
        """A call's requester: the person the response answers, else who asked the task."""
        asker = (asker_of(self.answering) if self.answering else None) or self.people.asked_by
        return Step(
            speaker=self.row.name,
            conversation=self.row.origin_conversation,
            human=self.human_target(),
            effects=effects,
            workspace=self.info.workspace,
            conv=conv,
            person=asker[0] if asker else None,
            person_id=asker[1] if asker else None,
            involved=tuple(self.people.spoke),
        )

    def human_target(self) -> Target:
        return where_to(self.row.origin_target, home=self.services.home) or TERMINAL


class Worker(AgentLoop):
    """`on_finished(worker, status)` is called once its task is over (done or failed)."""

    role: WorkerRole

    def __init__(
        self,
        services: Services,
        row: WorkerRow,
        on_finished: Callable[[Worker, WorkerStatus], None],
    ) -> None:
        self.row = row
        self.on_finished = on_finished
        self.parking = Parking(self)
        role = WorkerRole(services, row, self.parking)
        self.workspace = workspace_of(services.data_dir, role.info, services.limits.file_max_bytes)
        self.max_turns = services.limits.max_turns
        self.mailbox: Mailbox = services.bus.register(row.id)
        # whose profile the prompt shows: who asked for the task, then who last spoke to it
        self.person = role.asked_by
        self._asker: BusMessage | None = None  # a person's message taken in since the last turn
        self._posted = False  # the last response's text went to the person it answers
        self._cut = False  # the last response was cut or paused: the next one goes on with it
        super().__init__(services, row.id, role)
        info = role.info
        self.toolbox = Toolbox(self._tools(), services.sources_for(info), services.guard(info))

    def _tools(self) -> list[Tool]:
        tools = [
            send_message_tool(self.services, "worker"),
            Tool(ASK_HUMAN, step_handler=self.parking.ask_human),
            Tool(PUBLISH, step_handler=self._publish),
            Tool(SUGGEST_NEXT, step_handler=self._suggest),
        ]
        for factory in self.services.tool_factories:
            tools.extend(factory(self.role.info))
        return tools

    def heard(self, msg: BusMessage) -> None:
        if msg.kind in FROM_PERSON:
            self._asker = msg
            self.role.people.heard(msg, self.services.human.people)
            if msg.meta.get("person"):
                self.person = msg.meta["person"]
        super().heard(msg)

    def speak(self, conv: Conversation, text: str) -> None:
        """Text written right after a person spoke to this worker answers that person,
        in their conversation, as this worker; other text stays in the task."""
        msg = self.role.answering
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
                await self.parking.wait(conv, self.row.parked)
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
            text = worker_turn_limit(self.row.name, self.max_turns)
            publishing.report(self.row, self.role.human_target(), self.effects, text)
        status: WorkerStatus = "done" if outcome.kind == "ended" else "failed"
        self.row.status = status
        self.checkpoint(conv)
        self.on_finished(self, status)
        return False

    def _goes_on(self, conv: Conversation) -> bool:
        """A text-only reply does not end the task: one that answered a person is followed
        by a note that the task is open; one to nothing new by a reminder, once."""
        answering = self.role.answering
        if self._posted and answering is not None:
            who = answering.meta.get("sender") or answering.sender
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
        if not (self._cut and self.role.answering is not None):
            self.role.answering, self._asker = self._asker, None
        self._posted = False
        self._cut = response is not None and stop_of(response.stop_reason) in CONTINUED

    def checkpoint(self, conv: Conversation, extra: Any = None) -> None:
        def write() -> None:
            self.services.store.upsert_worker(self.row)
            pending = self._asker or (self.role.answering if self._cut else None)
            self.services.store.keep_asker(self.row.id, pending)
            self.role.people.save(self.services.store, self.row.id)
            if extra is not None:
                extra()

        super().checkpoint(conv, write)

    def announce(self, conv: Conversation, status: str) -> None:
        """Live progress: shown where the task came from, naming the worker."""
        key, origin = self.row.origin_conversation, self.row.origin_target
        if key and origin:
            said = working_on(self.row.name, status)
            self.services.human.progress.status(key, said, Target.parse(origin))

    async def _publish(self, args: dict[str, Any], step: Step) -> ToolResult:
        files = self.workspace.attachments(args.get("files") or [])
        result = args["result"] + await findings.share(self.services, self.row, args.get("learned"))
        self._publish_now(result, step.effects, files)
        return ToolResult("Published. Your task is complete.", end=True)

    def _publish_now(
        self, result: str, effects: Effects, files: list[Attachment] | None = None
    ) -> None:
        publishing.publish(
            self.services, self.row, self.role.human_target(), effects, result, files
        )

    async def _suggest(self, args: dict[str, Any], step: Step) -> str:
        step.effects.mail.append(publishing.suggestion(self.row, args["suggestion"]))
        return "Suggestion sent to the coordinator."
