"""Agent tools for triggers: `schedule`, `list_triggers`, `cancel_trigger`, and
`read_activity` (what happened in a period, so a scheduled summary has something to say).

Given to every agent (coordinator sessions and workers) through
`Services.tool_factories`. A trigger remembers the conversation it was created in:
its output goes to `deliver_to`, else that conversation, else SWITCHBOARD_HOME; only
that conversation lists, pauses, resumes or cancels it (the operator's own work, a
config trigger's turn, sees every one; the dashboard shows them all).
`schedule` takes `timezone`, `agent` and `action_type` top-level or inside `config`
(top-level wins), and answers with the next run in the trigger's zone and in UTC, so a
time read in the wrong zone shows at once. Every bad argument comes back to the model as
an error text saying what to send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agents.loop.marking import untrusted
from agents.services import AgentInfo
from agents.tools.toolbox import STR, Tool, ToolError, ToolSpec, arg, schema
from bot.core.messages import COORDINATOR, Target, TargetError
from bot.core.names import operator_conversation
from bot.core.notices import where_to
from bot.core.readout import when
from bot.core.trigger_spec import ACTION_TYPES
from bot.store.core import ACTIVE_WORKER_STATES
from bot.store.trigger_rows import TriggerRow
from bot.triggers import TYPES, TriggerError, build_spec
from bot.triggers.activity import period, read_activity
from bot.triggers.engine import TriggerEngine

SECONDS = {"type": "number"}
#: what a listing says of the triggers it leaves out (docs/security.md)
_OTHERS = "\n({n} more belong to other conversations or the config file.)"


def _shape(type: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    """The config keys of one trigger type (the keys every type takes are beside)."""
    return {"title": type, "properties": {**required, **(optional or {})}, "required": [*required]}


_ZONE = arg(STR, "IANA zone for cron and times without an offset (default: the requester's)")
_AGENT = arg(STR, "who is woken (default: you)")
_ACTION_TYPE = arg(STR, "wake_agent (default) or send_message", enum=list(ACTION_TYPES))
#: what `schedule` takes top-level as well as inside `config`: top-level wins
TOP_LEVEL = ("timezone", "agent", "action_type")

#: `config`: one shape per trigger type (`oneOf`), and the keys any type may add; `agent`
#: and `action_type` are taken here too, but shown top-level only (the contract names
#: `timezone` as a config key of `scheduled`, so it shows in both places)
CONFIG = {
    "type": "object",
    "description": "the keys of the shape titled like `type`",
    "properties": {
        "timezone": arg(STR, "as top-level timezone"),
        "missed": arg(STR, "after downtime: catch_up (default) or skip"),
        "grace_seconds": arg(SECONDS, "how late a catch-up may run"),
    },
    "oneOf": [
        _shape("scheduled", {"cron": arg(STR, "5-field cron, 0 = Sunday")}),
        _shape("delayed", {"delay_seconds": arg(SECONDS, "from now")}),
        _shape("at_time", {"at": arg(STR, "ISO 8601, future")}),
        _shape(
            "heartbeat",
            {"interval_seconds": arg(SECONDS, "between beats")},
            {
                "checklist": arg({"type": "array", "items": STR}, "what to check"),
                "watch": arg(
                    {"type": "array", "items": STR},
                    "wake only if changed: messages workers questions outbox triggers",
                ),
            },
        ),
        _shape(
            "on_event",
            {"event_pattern": arg(STR, "e.g. worker.completed")},
            {
                "filter": arg({"type": "object"}, "event fields to match"),
                "cooldown_seconds": arg(SECONDS, "least time between firings"),
            },
        ),
        _shape(
            "on_idle",
            {"idle_seconds": arg(SECONDS, "of quiet")},
            {"watch_agent": arg(STR, "whose quiet counts")},
        ),
    ],
}

SCHEDULE = ToolSpec(
    "schedule",
    "Make a trigger: a reminder, a recurring task, a reaction to an event. On firing, the "
    "agent (default you) gets `action` as its task, or, with action_type send_message, "
    "`action` is posted as written. timezone, agent and action_type go top-level, or in "
    "config (top-level wins).",
    schema(
        {
            "type": arg(STR, "when it fires", enum=list(TYPES)),
            "config": CONFIG,
            "action": arg(STR, "task for the agent, or message to post"),
        },
        {
            "deliver_to": arg(STR, "delivery target (default: this conversation, else home)"),
            "timezone": _ZONE,
            "agent": _AGENT,
            "action_type": _ACTION_TYPE,
        },
    ),
    examples=(
        {
            "type": "scheduled",
            "config": {"cron": "0 9 * * 1-5"},
            "timezone": "Europe/Berlin",
            "action": "Collect the team's stand-up notes",
        },
        {
            "type": "delayed",
            "config": {"delay_seconds": 7200},
            "action_type": "send_message",
            "action": "The release review starts now.",
        },
    ),
)
_TRIGGER_ID = arg(STR, "its id, from list_triggers")
LIST_TRIGGERS = ToolSpec(
    "list_triggers",
    "List active and paused triggers with their ids, makers, next fires and actions.",
    schema({}),
)
CANCEL_TRIGGER = ToolSpec(
    "cancel_trigger",
    "Delete a trigger for good. To stop it for a while: pause_trigger.",
    schema({"trigger_id": _TRIGGER_ID}),
)
PAUSE_TRIGGER = ToolSpec(
    "pause_trigger",
    "Pause a trigger, keeping its settings, until resume_trigger. To end it: cancel_trigger.",
    schema({"trigger_id": _TRIGGER_ID}),
)
RESUME_TRIGGER = ToolSpec(
    "resume_trigger",
    "Resume a paused trigger; a clock trigger's next fire is counted from now.",
    schema({"trigger_id": _TRIGGER_ID}),
)
SPAN = "ISO 8601, today, yesterday or a span back like 24h"
READ_ACTIVITY = ToolSpec(
    "read_activity",
    "What happened in a period: conversations, worker results, open questions, event "
    "counts; for a summary or 'what did I miss'. A whole channel, beyond the bot's talk: "
    "read_channel.",
    schema(
        {"since": arg(STR, SPAN)},
        {"until": arg(STR, "default now; same forms")},
    ),
)


def trigger_tools(engine: TriggerEngine) -> Callable[[AgentInfo], list[Tool]]:
    """The tool factory the app adds to `Services.tool_factories`."""

    def factory(info: AgentInfo) -> list[Tool]:
        tools = TriggerTools(engine, info)
        return [
            Tool(SCHEDULE, tools.schedule),
            Tool(LIST_TRIGGERS, tools.list),
            Tool(CANCEL_TRIGGER, tools.cancel),
            Tool(PAUSE_TRIGGER, tools.pause),
            Tool(RESUME_TRIGGER, tools.resume),
            Tool(READ_ACTIVITY, tools.read_activity),
        ]

    return factory


class TriggerTools:
    def __init__(self, engine: TriggerEngine, info: AgentInfo) -> None:
        self.engine = engine
        self.info = info

    async def schedule(self, args: dict[str, Any]) -> str:
        deliver_to = _target(args.get("deliver_to"))
        name, conversation, origin = self._origin()
        settings = self.engine.settings
        config = args["config"]
        if isinstance(config, dict):  # else build_spec says what config must be
            config = {**config, **{k: args[k] for k in TOP_LEVEL if k in args}}
        try:
            spec = build_spec(
                args["type"],
                config,
                args["action"],
                deliver_to,
                default_agent=name,
                default_timezone=self._zone(conversation),
                min_interval=settings.trigger_min_interval_seconds,
            )
        except TriggerError as exc:
            raise ToolError(str(exc)) from exc
        target = where_to(deliver_to, origin, home=self.engine.human.home)
        if target is None:
            raise ToolError("there is nowhere to deliver this trigger's output: give deliver_to")
        self._wakes_ours(spec.agent, conversation)
        row = self.engine.create(spec, self.info.agent_id, conversation, origin)
        fires = (
            f"wakes {spec.agent} with the action as its task"
            if spec.action_type == "wake_agent"
            else "posts the action as written"
        )
        return (
            f"Scheduled trigger {row.id}: {spec.describe()}; next run "
            f"{_local(self.engine.next_fire(row), row)} (times without an offset are in "
            f"{spec.timezone}). On firing it {fires}. Output goes to {target}."
        )

    def _zone(self, conversation: str | None) -> str:
        """The zone of the person this conversation serves, else the bot's."""
        speaker = self.engine.human.people.speaker_of(conversation)
        return speaker.timezone if speaker is not None else self.engine.settings.timezone

    async def list(self, args: dict[str, Any]) -> str:
        everyone = self.engine.table.live()
        rows = [r for r in everyone if self._ours(r)]
        others = len(everyone) - len(rows)
        if not rows:
            return "No active triggers." + _OTHERS.format(n=others) * bool(others)
        stats = self.engine.table.run_stats()
        fires = self.engine.next_fires()
        lines = []
        for row in rows:
            s = stats.get(row.id)
            missed = f", missed {s.missed}" if s and s.missed else ""
            nxt = (
                self.engine.idle_watch.next_fire(row.id)
                if row.spec.type == "on_idle"
                else fires.get(row.job_id)
            )
            paused = " PAUSED" if row.status == "paused" else ""
            lines.append(
                f"- {row.id}{paused} [{row.spec.type}, {row.source}, by {row.created_by}] "
                f"{row.spec.describe()}; next {_when(nxt, row)}"
                f"{missed}; {row.spec.action_type}: {row.spec.action[:200]}"
            )
        return "\n".join(lines) + _OTHERS.format(n=others) * bool(others)

    async def cancel(self, args: dict[str, Any]) -> str:
        trigger_id = self._mine(args, "cancel", "remove it there")
        if self.engine.cancel(trigger_id) is None and self.engine.cancel_paused(trigger_id) is None:
            raise ToolError(f"no active trigger {trigger_id!r}; {self._live()}")
        return f"Trigger {trigger_id} cancelled."

    async def pause(self, args: dict[str, Any]) -> str:
        trigger_id = self._mine(args, "pause", "set enabled = false there")
        if self.engine.pause(trigger_id) is None:
            raise ToolError(f"no active trigger {trigger_id!r} to pause; {self._live()}")
        return f"Trigger {trigger_id} paused; resume_trigger starts it again."

    async def resume(self, args: dict[str, Any]) -> str:
        trigger_id = self._mine(args, "resume", "set enabled = true there")
        row = self.engine.resume(trigger_id)
        if row is None:
            raise ToolError(f"no paused trigger {trigger_id!r}; {self._live()}")
        return f"Trigger {trigger_id} resumed; next fire {_when(self.engine.next_fire(row), row)}."

    def _mine(self, args: dict[str, Any], verb: str, config_hint: str) -> str:
        """The trigger id, if this agent may change it: its maker, or the coordinator;
        a trigger of the config file is changed there."""
        trigger_id = str(args["trigger_id"]).strip()
        row = self.engine.table.get(trigger_id)
        if row is None or row.status not in ("active", "paused"):
            return trigger_id  # the caller's own error names what exists
        if row.source == "config":
            raise ToolError(f"{trigger_id} comes from the config file; {config_hint}")
        if not self._ours(row):
            self._refused(verb, trigger_id)
            raise ToolError(
                f"{trigger_id} belongs to another conversation: only that conversation or an "
                f"operator (the dashboard) may {verb} it"
            )
        if self.info.kind != COORDINATOR and row.created_by != self.info.agent_id:
            raise ToolError(
                f"{trigger_id} belongs to {row.created_by}: only it, the coordinator or an "
                f"operator may {verb} it"
            )
        return trigger_id

    def _ours(self, row: TriggerRow) -> bool:
        """A trigger of this agent's own conversation (the operator's own work, a config
        trigger's, sees every trigger)."""
        _, conversation, _ = self._origin()
        return operator_conversation(conversation) or row.conversation == conversation

    def _wakes_ours(self, agent: str, conversation: str | None) -> None:
        """A trigger wakes this conversation's own agents: another's active worker is not
        to be steered by a task from here (one not active is started here, as its own)."""
        origin = self.engine.human.directory.origins.get(agent.lower())
        if origin is None or operator_conversation(conversation):
            return
        if origin.conversation != conversation:
            self._refused("schedule", f"worker {agent.lower()}")
            raise ToolError(f"{agent} works for another conversation: wake only this one's agents")

    def _refused(self, verb: str, trigger_id: str) -> None:
        """The audit line of a reach into another conversation's trigger."""
        _, conversation, _ = self._origin()
        people = self.engine.human.people
        speaker = people.speaker_of(conversation)
        self.engine.events.emit(
            "access.refused", self.info.agent_id, conversation=conversation,
            person=speaker.name if speaker else None, person_id=people.speaker_id_of(conversation),
            action=f"{verb}_trigger", resource=f"trigger {trigger_id}", outcome="refused",
        )  # fmt: skip

    def _live(self) -> str:
        rows = [r for r in self.engine.table.live() if self._ours(r)][:30]
        listed = ", ".join(f"{r.id}{' (paused)' if r.status == 'paused' else ''}" for r in rows)
        return f"active triggers: {listed or 'none'}"

    async def read_activity(self, args: dict[str, Any]) -> str:
        try:
            p = period(args["since"], args.get("until"), self.engine.settings.timezone, time.time())
        except TriggerError as exc:
            raise ToolError(str(exc)) from exc
        settings = self.engine.settings
        text = await asyncio.to_thread(read_activity, settings.database, self.engine.events.path, p)
        return untrusted(text, "activity: what people and agents said and did")

    def _origin(self) -> tuple[str, str | None, str | None]:
        """Who creates the trigger (its default agent), in which conversation, to where."""
        store = self.engine.store
        if self.info.kind == COORDINATOR:
            key = self.info.conversation
            target = store.agents.conversation_target(COORDINATOR, key) if key else None
            return COORDINATOR, key, target
        workers = store.agents.workers(ACTIVE_WORKER_STATES)  # the caller is running
        row = next((w for w in workers if w.id == self.info.agent_id), None)
        if row is None:
            return self.info.agent_id, self.info.conversation, None
        return row.name, row.origin_conversation, row.origin_target


def _target(text: Any) -> str | None:
    if not text:
        return None
    try:
        return str(Target.parse(text))
    except TargetError as exc:
        raise ToolError(f"deliver_to: {exc}") from exc


def _when(ts: float | None, row: TriggerRow) -> str:
    if ts is None:
        return {"on_event": "on the next matching event"}.get(row.spec.type, "not scheduled")
    return when(ts)


def _local(ts: float | None, row: TriggerRow) -> str:
    """The next run in the trigger's own zone, then in UTC: `2026-11-28 09:00
    Europe/Berlin (08:00 UTC)`, so a time read in the wrong zone shows at once."""
    if ts is None:
        return _when(ts, row)
    zone = row.spec.timezone
    local, utc = datetime.fromtimestamp(ts, ZoneInfo(zone)), datetime.fromtimestamp(ts, UTC)
    shown = f"{local:%Y-%m-%d} {_clock(local)} {zone}"
    if local.utcoffset() == timedelta(0):
        return shown if zone == "UTC" else f"{shown} (UTC)"
    day = f"{utc:%Y-%m-%d} " if utc.date() != local.date() else ""
    return f"{shown} ({day}{_clock(utc)} UTC)"


def _clock(moment: datetime) -> str:
    return f"{moment:%H:%M:%S}" if moment.second else f"{moment:%H:%M}"
