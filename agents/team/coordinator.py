"""The coordinator: always live, one agent with one LLM conversation per human
conversation, served concurrently.

Its main loop only sorts mail from its mailbox into sessions by conversation key;
each session runs its own task, handles its messages in order and sees new ones at
its next yield point. So ten people asking at once never wait for each other's LLM
turns, and the coordinator keeps answering while workers run. A session's task ends
when its queue is empty; its conversation stays in the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Coroutine
from typing import Any

from agents.loop.loop import AgentLoop, Conversation
from agents.loop.prompts import system_prompt
from agents.loop.step import Effects, Step, asker_of
from agents.loop.turns import dangling_calls
from agents.services import AgentInfo, Services
from agents.team.fresh import start_afresh
from agents.team.stop import TurnStopped, close_turn
from agents.team.team import NotYours, Team
from agents.tools.files import workspace_for
from agents.tools.messaging import send_message_tool
from agents.tools.toolbox import STR, Tool, Toolbox, ToolSpec, arg, schema
from bot.core.bus import Mail
from bot.core.messages import COORDINATOR, Outbound
from bot.core.names import HOME_CONVERSATION
from bot.core.notices import SESSION_FAILED, SHOWN, STOPPED, TERMINAL, turn_limit, where_to
from bot.core.tasks import cancel_all

log = logging.getLogger(__name__)

HOME_KEY = HOME_CONVERSATION
ROLE = """\
- Answer short questions yourself, directly and briefly. Spawn a worker for work that \
needs several steps, research or a person's decision: give it a short name no person \
of the team has (Alice, Bob, ...) and a self-contained task. People can address a \
worker by name (@Alice ...). When a worker publishes, tell the person what matters in \
a few lines.
- Everything you write is sent to the person of this conversation, including text \
beside tool calls; do not repeat it afterwards. Use send_message only for other \
recipients.
- When a heartbeat, a scheduled task, a worker's suggestion or a Switchboard notice \
needs no word to the person, reply with nothing at all (or just NO_REPLY): nothing is \
posted.
- Write in Markdown; channels convert it to their own formatting."""

SPAWN_WORKER = ToolSpec(
    "spawn_worker",
    "Start a worker on a task of many steps, or one to run beside others; its result comes "
    "back here for you to summarise. Quick lookups and short answers you do yourself. "
    "People can talk to it as @name.",
    schema(
        {
            "name": arg(STR, "short, to address it (@Alice); never a person's name"),
            "task": arg(STR, "self-contained: the goal, what you know, what to return"),
        }
    ),
)
LIST_WORKERS = ToolSpec(
    "list_workers",
    "List active workers: name, state, turns used, task.",
    schema({}),
)
STOP_WORKER = ToolSpec(
    "stop_worker",
    "Stop an active worker at once; its task ends unpublished. For work a person cancelled "
    "or that is no longer needed.",
    schema({"name": arg(STR, "its name")}),
)


class CoordinatorRole:
    """The coordinator's role in one conversation: its prompt names the place and the
    people; its calls act for the person whose message the turn handles. It has no task
    of its own: none of its tools parks or ends one."""

    task = None

    def __init__(self, services: Services, key: str) -> None:
        self.services = services
        self.key = key
        self.info = AgentInfo(COORDINATOR, "coordinator", key, workspace_for("coordinator", key))
        #: (person, platform id) whose message the turn handles: its gated calls' requester
        self.asking: tuple[str, str | None] | None = None

    def system_prompt(self, conv: Conversation) -> str:
        where = conv.target or "no channel (messages go to the home target)"
        role = f"This conversation: {where}.\n{ROLE}"
        people = self.services.human.people.listed()
        if people:  # so a worker's name never reads as a person's
            role += f"\nPeople of the team (never a worker's name): {', '.join(people)}."
        return system_prompt(self.services, self.info, conv, role)

    def step(self, conv: Conversation, effects: Effects) -> Step:
        target = where_to(conv.target, home=self.services.home)
        return Step(
            speaker=COORDINATOR,
            conversation=self.key,
            human=target if target is not None else TERMINAL,
            effects=effects,
            workspace=self.info.workspace,
            conv=conv,
            person=self.asking[0] if self.asking else None,
            person_id=self.asking[1] if self.asking else None,
        )


class Coordinator:
    def __init__(self, services: Services, team: Team) -> None:
        self.services = services
        self.team = team
        self.mailbox = services.bus.register(COORDINATOR)
        #: bounded by the conversations with work under way: a session leaves when idle
        self.sessions: dict[str, Session] = {}

    async def run(self) -> None:
        for key in self.services.store.agents.unfinished_conversations(COORDINATOR):
            self._session(key).wake()  # a crash interrupted this conversation's turn
        for row in self.services.store.approvals.unsettled(COORDINATOR):
            self._session(row.held.get("key") or row.conversation).wake()  # still waiting
        while True:
            for mail in await self.mailbox.wait():
                key = mail.msg.conversation or HOME_KEY
                if mail.msg.meta.get("fresh"):
                    self._fresh(key, mail)
                elif mail.msg.meta.get(SHOWN):
                    # the person saw it: read at the next turn, no answer
                    self._session(key).hold(mail)
                else:
                    self._session(key).put(mail)

    def _fresh(self, key: str, mail: Mail) -> None:
        """`new`: the session under way finishes with what it has; a new one serves
        what comes after, once the transcript is archived (agents/team/fresh.py)."""
        old = self.sessions.pop(key, None)
        session = self.sessions[key] = Session(self, key)
        session.before = start_afresh(self.services, key, mail, old.task if old else None)
        session.wake()

    def _session(self, key: str) -> Session:
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = Session(self, key)
        return session

    def stop_turn(self, key: str) -> bool:
        """A person said `stop` in conversation `key`: end its running turn, if any."""
        session = self.sessions.get(key)
        if session is None or session.task is None:
            return False
        session.stop()
        return True

    def closed(self, session: Session) -> None:
        if self.sessions.get(session.key) is session:
            del self.sessions[session.key]

    async def shutdown(self) -> None:
        await cancel_all([s.task for s in self.sessions.values() if s.task is not None])


class Session(AgentLoop):
    """The coordinator serving one human conversation."""

    streams = True  # the person reads its text as the model writes it
    role: CoordinatorRole

    def __init__(self, coordinator: Coordinator, key: str) -> None:
        self.coordinator = coordinator
        self.key = key
        self.queue: deque[Mail] = deque()
        self.task: asyncio.Task[None] | None = None
        self.person: str | None = None
        self.conv: Conversation | None = None
        #: what must finish before this session reads its transcript (a fresh start)
        self.before: Coroutine[Any, Any, None] | None = None
        self.stopping = False  # a person said stop: the turn ends at its next yield point
        self.in_model = False  # a model call is in flight (a stop cancels it)
        services = coordinator.services
        self.max_turns = services.limits.max_turns
        super().__init__(services, COORDINATOR, CoordinatorRole(services, key))
        info = self.role.info
        self.toolbox = Toolbox(self._tools(), services.sources_for(info), services.guard(info))

    def _tools(self) -> list[Tool]:
        tools = [
            send_message_tool(self.services, "coordinator"),
            Tool(SPAWN_WORKER, self._spawn),
            Tool(LIST_WORKERS, self._list),
            Tool(STOP_WORKER, self._stop),
        ]
        for factory in self.services.tool_factories:
            tools.extend(factory(self.role.info))
        return tools

    def put(self, mail: Mail) -> None:
        self.queue.append(mail)
        self.wake()

    def hold(self, mail: Mail) -> None:
        """Mail the model reads at its next turn without a turn of its own (a runtime
        notice the person was already shown: answering it would say it twice)."""
        self.queue.append(mail)

    def _wanted(self) -> bool:
        """Whether the queue holds mail that asks for a turn."""
        return any(not mail.msg.meta.get(SHOWN) for mail in self.queue)

    def wake(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._start(), name=f"coordinator:{self.key}")

    async def _start(self) -> None:
        before, self.before = self.before, None
        if before is not None:
            try:
                await before
            except Exception:
                log.exception("the fresh start of %s failed", self.key)
        await self._serve()

    def stop(self) -> None:
        self.stopping = True
        if self.in_model and self.task is not None:
            self.task.cancel()

    async def between_steps(self) -> None:
        """A stop said meanwhile ends the turn here (the model not yet called)."""
        await super().between_steps()
        if self.stopping:
            raise TurnStopped

    async def _complete(self, conv: Conversation, system: str) -> Any:
        self.in_model = True
        try:
            return await super()._complete(conv, system)
        finally:
            self.in_model = False

    def drain(self) -> list[Mail]:
        if self.stopping:  # ── the yield point where a stopped turn ends ──
            raise TurnStopped
        items = list(self.queue)
        self.queue.clear()
        for mail in items:
            self._note_sender(mail)
        return items

    def _note_sender(self, mail: Mail) -> None:
        meta = mail.msg.meta
        if meta.get("reply_to") and self.conv is not None:
            self.conv.target = meta["reply_to"]
        if meta.get("person") or meta.get("sender_id"):
            self.person = meta.get("person") or meta["sender_id"]
        self.role.asking = asker_of(mail.msg) or self.role.asking

    async def _serve(self) -> None:
        try:
            self.conv = Conversation.load(self.services.store, COORDINATOR, self.key)
            # a crash cut its last turn short (before the model answered, or before the
            # tools of an answer already delivered ran)
            interrupted = self.conv.awaits_model or bool(dangling_calls(self.conv.messages))
            if await self.resume_approval(self.conv):
                interrupted = True  # the model has the gated call's result to read
            while self._wanted() or interrupted:
                interrupted = False
                outcome = await self.think(self.conv, self)
                if outcome.kind == "limit":
                    self.tell(self.conv, turn_limit(self.max_turns))
                self.checkpoint(self.conv)
        except asyncio.CancelledError:
            if not self.stopping:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]  # our own stop
            await self._stopped()
        except TurnStopped:
            await self._stopped()
        except Exception:
            log.exception("coordinator session %s failed", self.key)
            if self.conv is not None:
                self.tell(self.conv, SESSION_FAILED)
        finally:
            self.task = None
            if self._wanted():
                self.wake()
            else:
                self.services.human.progress.end(self.key)
                self.coordinator.closed(self)

    async def _stopped(self) -> None:
        """The turn was stopped: the conversation closed as a finished turn, what was
        streamed left as it is, a short acknowledgement posted."""
        self.stopping = False
        self.services.events.emit("turn.stopped", COORDINATOR, conversation=self.key)
        await self.services.human.progress.abandon(self.key)
        if self.conv is not None:
            close_turn(self.conv)
            self.tell(self.conv, STOPPED)
            self.checkpoint(self.conv)

    def speak(self, conv: Conversation, text: str) -> None:
        """Every text the model writes here is for the person of this conversation,
        in order; it leaves with the step's checkpoint (before the step's tools run)."""
        target = self.target_of(conv)
        if target is None:
            log.warning("no target for coordinator conversation %s; reply dropped", conv.key)
            return
        self.effects.outbound.append(Outbound(COORDINATOR, target, text, conv.key))

    # -- tools -------------------------------------------------------------------------
    async def _spawn(self, args: dict[str, Any]) -> str:
        conv = self.conv
        worker = self.coordinator.team.spawn(
            args["name"].strip(), args["task"], self.key, conv.target if conv else None,
            self.role.asking,
        )  # fmt: skip
        return f"Worker {worker.row.name} started. It will report back here when it publishes."

    async def _list(self, args: dict[str, Any]) -> str:
        return self.coordinator.team.describe(self.key)

    async def _stop(self, args: dict[str, Any]) -> str:
        """Only this conversation's own workers (docs/security.md); a refusal is audited."""
        team = self.coordinator.team
        try:
            worker = team.stop_for(args["name"].strip(), self.key)
        except NotYours:
            self._refused("stop_worker", f"worker {args['name'].strip().lower()}")
            raise
        return await team.stop(worker.row.name)

    def _refused(self, action: str, resource: str) -> None:
        asking = self.role.asking or (None, None)
        self.services.events.emit(
            "access.refused", COORDINATOR, conversation=self.key, person=asking[0],
            person_id=asking[1], action=action, resource=resource, outcome="refused",
        )  # fmt: skip
