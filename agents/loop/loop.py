"""The agent loop: think (LLM call), act (tools), with a yield point before every
LLM call and between tool calls (reference 000, section 8.2).

At a yield point the node drains its mailbox into the conversation, so a worker deep
in a task sees "stop" or "focus on X" at its next step. Every step ends in a
checkpoint: one transaction saves the conversation, deletes the mail it consumed
and queues the messages and bus mail the step produced. A crash therefore repeats
at most the model call of the step it interrupted, never a delivered reply.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agents.loop import calling, calls, failover
from agents.loop import turns as turns_mod
from agents.loop.conversation import Conversation
from agents.loop.prompts import snapshot
from agents.loop.role import Role
from agents.loop.step import Effects, Step
from agents.loop.transcript import CONTEXT, context_texts, person_of, render
from agents.model.attachments import blocks as attachment_blocks
from agents.model.blocks import THINKING, Blocks, ToolResultBlock, ToolUseBlock
from agents.model.llm import CallLabel, LLMResponse
from agents.services import Services
from agents.tools.toolbox import Toolbox, ToolResult, result_block
from bot.core.bus import Mail
from bot.core.clock import now_line
from bot.core.messages import COORDINATOR, BusMessage, Outbound, Target
from bot.core.notices import (
    SYSTEM_SPEAKER,
    WAITING_FOR_APPROVAL,
    doing,
    model_declined,
    where_to,
)

log = logging.getLogger(__name__)

NOT_RUN_APPROVAL = (
    "Not run: an earlier call waits for approval; call it again afterwards if needed."
)
#: a call that would park or end the task of an agent that has none (a tool set's mistake)
NO_TASK = "Refused: {name} parks or ends a task, and this agent has no task of its own."


#: How thinking ended: `done` (the model stopped calling tools), `parked` (a call waits
#: for a person), `ended` (a call ended the task), `limit` (out of turns), `failed`
#: (the API refused the request), `declined` (the model declined: `stop_reason: refusal`).
OutcomeKind = Literal["done", "parked", "ended", "limit", "failed", "declined"]


@dataclass(slots=True)
class Outcome:
    kind: OutcomeKind
    text: str = ""
    question_id: str | None = None


class Inbox(Protocol):
    def drain(self) -> list[Mail]: ...


class AgentLoop:
    """The think/act machinery of one agent; coordinator and workers build on it, each
    with its role (agents/loop/role.py): its prompt, its steps, its task if it has one."""

    agent_id: str
    max_turns: int
    #: its text reaches a person as the model writes it (the coordinator's does)
    streams: bool = False

    toolbox: Toolbox

    def __init__(self, services: Services, agent_id: str, role: Role) -> None:
        self.services = services
        self.agent_id = agent_id
        self.role = role
        self.effects = Effects()
        #: the trigger whose task alone this turn serves: its posts carry the trigger's
        #: id, so they never fire that trigger again (bot/triggers/watchers.py)
        self.cause: str | None = None

    def absorb(self, conv: Conversation, mail: list[Mail]) -> None:
        """Yield point: take the mailbox's contents into the conversation, after a line
        with the current date and time (in the zone of the person speaking, when one
        does) and the context of this turn (their profile, memory written since): what
        changes travels with the messages, so the system prompt stays cached."""
        for item in mail:
            self.heard(item.msg)  # first: a preference said now is in the profile shown now
        if mail:
            causes = {item.msg.meta.get("trigger_id") for item in mail}
            self.cause = causes.pop() if len(causes) == 1 else None
            conv.add_clock(self.now(mail))
            self.add_context(conv, [p for m in mail if (p := person_of(m.msg))])
        for item in mail:
            conv.add_text(render(item))
            conv.add_blocks(attachment_blocks(item.msg.attachments, self.services.data_dir))
            self.effects.consumed.append(item.id)

    def add_context(self, conv: Conversation, people: list[str]) -> None:
        """A `[Context for this turn]` block with what the conversation does not hold yet."""
        memory = self.services.memory
        if memory is None:
            return
        system = snapshot(self.services, conv)
        shown = "\n".join(context_texts(conv.messages))
        blocks = memory.context(self.agent_id, list(dict.fromkeys(people)), system, shown)
        if blocks:
            conv.add_text("\n\n".join([CONTEXT, *blocks]))

    def now(self, mail: list[Mail] | None = None, conversation: str | None = None) -> str:
        """`[Now: YYYY-MM-DD HH:MM <zone> ...]` in the zone of the first person speaking,
        else of the person of the mail's conversation (a reminder firing there) or of
        `conversation` (where a worker's task was asked), else SWITCHBOARD_TIMEZONE."""
        people = self.services.human.people
        zones = [m.msg.meta.get("timezone") for m in mail or [] if m.msg.meta.get("timezone")]
        places = [item.msg.conversation for item in mail or []] + [conversation]
        for place in places:
            speaker = people.speaker_of(place) if place else None
            if speaker is not None:
                zones.append(speaker.timezone)
        return now_line(zones[0] if zones else people.default_zone, fallback=people.default_zone)

    def heard(self, msg: BusMessage) -> None:
        """Every message the agent takes in passes here (memory's auto-capture)."""
        if self.services.memory is not None:
            self.services.memory.heard(self.agent_id, msg)

    def checkpoint(self, conv: Conversation, extra: Callable[[], None] | None = None) -> None:
        effects, self.effects = self.effects, Effects()
        store = self.services.store
        with store.tx():
            store.agents.save_conversation(conv.agent, conv.key, conv.messages, conv.target)
            store.consume_mail(effects.consumed)
            for msg in effects.outbound:
                if self.cause is not None:
                    msg.meta.setdefault("trigger_id", self.cause)
                self.services.human.say(msg)
            for bus_msg in effects.mail:
                self.services.bus.send(bus_msg)
            if extra is not None:
                extra()

    async def think(self, conv: Conversation, inbox: Inbox, turns_used: int = 0) -> Outcome:
        """Run LLM turns until the model stops calling tools, parks, ends or hits the limit."""
        turns = turns_used
        conv.add_blocks(turns_mod.interrupted_results(conv.messages))  # a restart cut calls off
        saved = False  # the caller's changes to conv are not in the store yet
        # text of a cut or paused answer, until it is whole (after a restart: from the store)
        held = turns_mod.held_text(conv.messages)
        while True:
            mail = inbox.drain()  # ── yield point ──
            if mail or not saved:
                self.absorb(conv, mail)
                self.checkpoint(conv)
            if turns >= self.max_turns:
                self._stop_at_limit(conv, held)
                return Outcome("limit")
            await self.between_steps()
            system = await calling.fit(self, conv)
            response = await self._complete(conv, system)
            turns += 1
            self.on_turn(turns, response)
            if response is None:
                return Outcome("failed")
            self._thought(conv, response)
            outcome = await self._respond(conv, inbox, response, held)
            if outcome is not None:
                return outcome
            saved = True  # every path of _respond that goes on ended in a checkpoint

    async def _respond(
        self, conv: Conversation, inbox: Inbox, response: LLMResponse, held: list[str]
    ) -> Outcome | None:
        """Act on one response by its stop_reason; None when the turn goes on."""
        stop = turns_mod.stop_of(response.stop_reason)
        content = turns_mod.clean(response.content)
        if stop == "pause_turn" and turns_mod.calls_of(content):
            stop = "end_turn"  # our own tools to run: that is how the turn goes on
        if stop == "context_full":
            return await self._make_room(conv, held)
        if stop in turns_mod.CONTINUED:
            self._carry_on(conv, content, held, stop)
            return None
        if stop == "refusal":
            if failover.after_refusal(self, conv, response.stop_details):
                return None  # the same request, to the next model of the fallback list
            return self._declined(conv, response, held)
        turns_mod.add_reply(conv.messages, content)
        if held and not turns_mod.said(content):
            turns_mod.drop_continue_note(conv.messages)
        text = "".join([*held, turns_mod.raw_text(content)]).strip()
        held.clear()
        if not turns_mod.silent(text):
            self.speak(conv, text)
            if self.services.memory is not None:  # the agent's own decisions are captured
                self.services.memory.said(self.agent_id, text, self.step(conv).conversation)
        if not turns_mod.calls_of(content):
            return Outcome("done", text)
        self.checkpoint(conv)  # what the model said is on its way before the tools run
        return await self._act(conv, inbox, LLMResponse(content, response.stop_reason))

    def _thought(self, conv: Conversation, response: LLMResponse) -> None:
        """Say in the event log that a turn thought, and how much (never what)."""
        tokens = response.usage.thinking_tokens
        blocks = sum(1 for b in response.content if b["type"] in THINKING)
        if tokens or blocks:
            self.services.events.emit(
                "llm.thought", self.agent_id, conversation=conv.key, tokens=tokens, blocks=blocks
            )

    def _declined(self, conv: Conversation, response: LLMResponse, held: list[str]) -> Outcome:
        """The model declined: the turn that led there leaves the context (else the next
        request is declined too), with its answer so far (said as it was written); the
        person hears why."""
        self._speak_held(conv, held)
        details = response.stop_details or {}
        log.warning(
            "%s declined a turn in %s (category %s)",
            self.agent_id,
            conv.key,
            details.get("category") or "none given",
        )
        self.services.events.emit(
            "llm.declined", self.agent_id, conversation=conv.key, category=details.get("category")
        )
        turns_mod.decline(conv.messages)
        self.tell(conv, model_declined(details.get("explanation")))
        self.checkpoint(conv)
        return Outcome("declined")

    async def _make_room(self, conv: Conversation, held: list[str]) -> Outcome | None:
        """The context window is full: the cut answer dropped, room made, asked again."""
        held.clear()
        return None if await calling.make_room(self, conv) else Outcome("failed")

    def _carry_on(self, conv: Conversation, content: Blocks, held: list[str], stop: str) -> None:
        """A cut answer (max_tokens) is continued, a cut call asked again, a paused turn
        resumed; the text so far waits to reach the person as one answer."""
        calls = turns_mod.calls_of(content)
        content = turns_mod.without_calls(content)
        held.append(turns_mod.raw_text(content))
        if stop == "pause_turn" and not calls:
            # the next request ends with it: the API goes on from there
            turns_mod.add_reply(conv.messages, turns_mod.rstripped(content))
        else:
            turns_mod.add_reply(conv.messages, content)  # nothing said: nothing stored
            names = ", ".join(sorted({c["name"] for c in calls}))
            note = turns_mod.REPEAT_CALL.format(names=names) if calls else turns_mod.CONTINUE
            conv.add_text(note)
        self.services.events.emit("llm.continued", self.agent_id, stop=stop, cut_calls=len(calls))
        self.checkpoint(conv)

    def _speak_held(self, conv: Conversation, held: list[str]) -> None:
        text = "".join(held).strip()
        held.clear()
        if text:
            self.speak(conv, text)

    def _stop_at_limit(self, conv: Conversation, held: list[str]) -> None:
        """Out of turns: what was held is said, and the conversation is closed with a
        note, so a restart does not run it again."""
        self._speak_held(conv, held)
        if conv.awaits_model:
            turns_mod.close(conv.messages, turns_mod.LIMIT_NOTE)

    def speak(self, conv: Conversation, text: str) -> None:
        """Hook: the model wrote `text` in a response (the coordinator's is for its person)."""

    def step(self, conv: Conversation) -> Step:
        """The context a tool call of this step acts in (its role's)."""
        return self.role.step(conv, self.effects)

    def on_turn(self, turns: int, response: LLMResponse | None) -> None:
        """Hook: a turn finished (workers count them)."""

    async def _act(self, conv: Conversation, inbox: Inbox, response: LLMResponse) -> Outcome | None:
        results: list[ToolResultBlock] = []
        later: list[Mail] = []
        outcome: Outcome | None = None
        gated: tuple[ToolUseBlock, Any] | None = None
        parked: tuple[str, str] | None = None  # (tool_use id, question id)
        for call in response.tool_calls:
            later.extend(inbox.drain())  # ── yield point between tool calls ──
            if outcome is not None:
                not_run = (
                    NOT_RUN_APPROVAL
                    if gated is not None
                    else "Not run: the task was parked or ended by an earlier call."
                )
                results.append(result_block(call["id"], ToolResult(not_run, is_error=True)))
                continue
            result = self._within_role(call, await self._call(call, conv))
            if result.approval is not None:
                outcome, gated = Outcome("parked"), (call, result.approval)
                continue
            if result.park is not None:
                outcome = Outcome("parked", question_id=result.park)
                parked = (call["id"], result.park)
                continue
            results.append(result_block(call["id"], result))
            if result.end:
                outcome = Outcome("ended", result.text)
        if gated is not None:
            await self._await_approval(conv, gated, results, later)
            return None
        return self._after_calls(conv, outcome, parked, results, later)

    def _within_role(self, call: ToolUseBlock, result: ToolResult) -> ToolResult:
        """A call that parks or ends a task, in an agent with none: refused, logged."""
        if self.role.task is not None or (result.park is None and not result.end):
            return result
        log.error("%s: a call of %s would park or end a task", self.agent_id, call["name"])
        return ToolResult(NO_TASK.format(name=call["name"]), is_error=True)

    def _after_calls(
        self,
        conv: Conversation,
        outcome: Outcome | None,
        parked: tuple[str, str] | None,
        results: list[ToolResultBlock],
        later: list[Mail],
    ) -> Outcome | None:
        """The step's results stored (or kept with a parked task), then its checkpoint."""
        task = self.role.task
        if task is not None and parked is not None:
            task.park(conv, parked, results, later)
            return outcome
        conv.add_blocks(results)
        if task is not None and outcome is not None and outcome.kind == "ended":
            task.unread(later)  # nobody would read them in this conversation any more
        else:
            self.absorb(conv, later)
        self.checkpoint(conv)
        return outcome

    async def _await_approval(
        self,
        conv: Conversation,
        gated: tuple[ToolUseBlock, Any],
        results: list[ToolResultBlock],
        later: list[Mail],
    ) -> None:
        """A gated call: checkpoint the request, wait for the decision (this conversation
        only; others go on), then the same tool_use gets its result (agents/tools/approvals.py)."""
        approvals = self.services.approvals
        assert approvals is not None
        call, ask = gated
        approval_id = approvals.hold(self, conv, call, ask, results, later)
        await approvals.settle(self, conv, approval_id)

    async def resume_approval(self, conv: Conversation) -> bool:
        """After a restart: finish a gated call the conversation was waiting on."""
        approvals = self.services.approvals
        return approvals is not None and await approvals.resume(self, conv)

    async def _call(self, call: ToolUseBlock, conv: Conversation) -> ToolResult:
        """One tool call, recorded as `tool.called` (agent, tool, duration, ok or error;
        for the audit log: whose conversation, a digest of the arguments, the outcome)."""
        self.announce(conv, doing(call["name"], call["input"]))
        started = time.perf_counter()
        step = self.step(conv)
        result = await self.toolbox.call(call["name"], call["input"], step)
        calls.record(self.services, self.agent_id, call, step, result, started)
        if result.approval is not None:
            self.announce(conv, WAITING_FOR_APPROVAL)
        return result

    def announce(self, conv: Conversation, status: str) -> None:
        """Live progress: what this agent does now, shown where its person waits."""
        self.services.human.progress.status(conv.key, status)

    async def _complete(self, conv: Conversation, system: str) -> LLMResponse | None:
        return await calling.complete(self, conv, system)

    async def between_steps(self) -> None:
        """A yield between the steps preparing a call: a hook or message waits one step."""
        await asyncio.sleep(0)

    def call_label(self, conv: Conversation) -> CallLabel:
        """Whose usage a model call of this conversation is."""
        kind: Literal["coordinator", "worker"] = (
            "coordinator" if self.agent_id == COORDINATOR else "worker"
        )
        return CallLabel(self.agent_id, kind, conv.key)

    def tell(self, conv: Conversation, text: str) -> None:
        """A notice from the runtime to the person of this conversation, sent at once."""
        target = self.target_of(conv)
        if target is not None:
            self.services.human.say(Outbound(SYSTEM_SPEAKER, target, text, conv.key, kind="notice"))

    def target_of(self, conv: Conversation) -> Target | None:
        return where_to(conv.target, home=self.services.home)
