"""Agent tools for triggers: `schedule`, `list_triggers`, `cancel_trigger`, and
`read_activity` (what happened in a period, so a scheduled summary has something to say).

Given to every agent (coordinator sessions and workers) through
`Services.tool_factories`. A trigger remembers the conversation it was created in:
its output goes to `deliver_to`, else that conversation, else SWITCHBOARD_HOME.
Every bad argument comes back to the model as an error text saying what to send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from agents.services import AgentInfo
from agents.tools import STR, Tool, ToolError, ToolSpec, arg, schema
from bot.messages import COORDINATOR, Target, TargetError
from bot.notices import where_to
from bot.status import when
from bot.store import ACTIVE_WORKER_STATES
from bot.triggers import TYPES, TriggerError, build_spec
from bot.triggers.activity import period, read_activity
from bot.triggers.engine import TriggerEngine
from bot.triggers.rows import TriggerRow

SECONDS = {"type": "number"}
#: keys every trigger's config may add
COMMON_CONFIG = {
    "timezone": arg(
        STR, "IANA zone, e.g. Europe/Berlin (default: the zone of this conversation's person)"
    ),
    "agent": arg(STR, "who is woken: coordinator or a worker's name (default: you)"),
    "action_type": arg(
        STR,
        "wake_agent: `action` is a task for the agent (default); send_message: `action` "
        "is posted as is",
        enum=["wake_agent", "send_message"],
    ),
    "missed": arg(
        STR,
        "after downtime: catch_up runs once late (default), skip drops the missed run",
        enum=["catch_up", "skip"],
    ),
    "grace_seconds": arg(SECONDS, "how late a catch-up may still run (default 3600)"),
}


def _config(type: str, what: str, required: dict[str, Any], optional: dict[str, Any]) -> Any:
    shape = schema(required, {**optional, **COMMON_CONFIG})
    return {"title": type, "description": f"config of a {type} trigger: {what}", **shape}


WATCHED = ["messages", "workers", "questions", "outbox", "triggers"]
CONFIGS = [
    _config(
        "scheduled",
        "on a cron schedule",
        {"cron": arg(STR, "5-field cron, e.g. '0 9 * * 1-5' (weekday 0 = Sunday)")},
        {},
    ),
    _config("delayed", "once, after a delay", {"delay_seconds": arg(SECONDS, "seconds")}, {}),
    _config(
        "at_time",
        "once, at a time",
        {"at": arg(STR, "ISO 8601 date-time in the future, e.g. 2030-02-12T09:00:00")},
        {},
    ),
    _config(
        "heartbeat",
        "every interval, waking you only when something watched changed",
        {"interval_seconds": arg(SECONDS, "seconds between checks")},
        {
            "checklist": arg({"type": "array", "items": STR}, "what to check at each beat"),
            "watch": arg(
                {"type": "array", "items": {"type": "string", "enum": WATCHED}},
                "what must have changed for a beat to wake you",
            ),
        },
    ),
    _config(
        "on_event",
        "when a runtime event happens",
        {"event_pattern": arg(STR, "event type or glob, e.g. worker.completed")},
        {
            "filter": arg({"type": "object"}, "event fields that must match, e.g. agent_id"),
            "cooldown_seconds": arg(SECONDS, "least time between two firings (default 10)"),
        },
    ),
    _config(
        "on_idle",
        "when nothing happened for a while",
        {"idle_seconds": arg(SECONDS, "seconds of quiet")},
        {"watch_agent": arg(STR, "whose activity counts (default: everyone's)")},
    ),
]

SCHEDULE = ToolSpec(
    "schedule",
    "Schedule something to happen later: a reminder, a recurring check, a task when an "
    "event happens. Its output goes to `deliver_to`, else this conversation, else the "
    "home target.",
    schema(
        {
            "type": arg(STR, "when it fires; `config` takes the matching shape", enum=list(TYPES)),
            "config": arg(
                {"type": "object", "oneOf": CONFIGS},
                "the settings of `type` (the shape titled with that type)",
            ),
            "action": arg(
                STR, "what to do when it fires: a task for the agent, or the message to post"
            ),
        },
        {"deliver_to": arg(STR, "delivery target for the output, e.g. slack:C123")},
    ),
)
LIST_TRIGGERS = ToolSpec(
    "list_triggers", "List the active triggers with their ids and next fire times.", schema({})
)
CANCEL_TRIGGER = ToolSpec(
    "cancel_trigger",
    "Cancel an active trigger.",
    schema({"trigger_id": arg(STR, "the trigger's id, as schedule or list_triggers gave it")}),
)
SPAN = "ISO 8601, 'today', 'yesterday' or a span back from now like '24h'"
READ_ACTIVITY = ToolSpec(
    "read_activity",
    "What happened in a period: conversations (people's messages and agents' replies), "
    "worker results, open questions, event counts.",
    schema(
        {"since": arg(STR, f"start: {SPAN} ('yesterday' alone: the whole of yesterday)")},
        {"until": arg(STR, f"end (default now): {SPAN}")},
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
        try:
            spec = build_spec(
                args["type"],
                args["config"],
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
        row = self.engine.create(spec, self.info.agent_id, conversation, origin)
        return (
            f"Scheduled trigger {row.id}: {spec.describe()}; next fire "
            f"{_when(self.engine.next_fire(row), row)} (times without an offset are in "
            f"{spec.timezone}). Output goes to {target}."
        )

    def _zone(self, conversation: str | None) -> str:
        """The zone of the person this conversation serves, else the bot's."""
        speaker = self.engine.human.people.speaker_of(conversation)
        return speaker.timezone if speaker is not None else self.engine.settings.timezone

    async def list(self, args: dict[str, Any]) -> str:
        rows = self.engine.table.active()
        if not rows:
            return "No active triggers."
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
            lines.append(
                f"- {row.id} [{row.spec.type}, {row.source}, by {row.created_by}] "
                f"{row.spec.describe()}; next {_when(nxt, row)}"
                f"{missed}; {row.spec.action_type}: {row.spec.action[:200]}"
            )
        return "\n".join(lines)

    async def cancel(self, args: dict[str, Any]) -> str:
        trigger_id = args["trigger_id"].strip()
        row = self.engine.table.get(trigger_id)
        if row is not None and row.source == "config" and row.status == "active":
            raise ToolError(f"{trigger_id} comes from the config file; remove it there")
        if self.engine.cancel(trigger_id) is None:
            active = ", ".join(r.id for r in self.engine.table.active()[:30]) or "none"
            raise ToolError(f"no active trigger {trigger_id!r}; active triggers: {active}")
        return f"Trigger {trigger_id} cancelled."

    async def read_activity(self, args: dict[str, Any]) -> str:
        try:
            p = period(args["since"], args.get("until"), self.engine.settings.timezone, time.time())
        except TriggerError as exc:
            raise ToolError(str(exc)) from exc
        settings = self.engine.settings
        return await asyncio.to_thread(read_activity, settings.db_path, self.engine.events.path, p)

    def _origin(self) -> tuple[str, str | None, str | None]:
        """Who creates the trigger (its default agent), in which conversation, to where."""
        store = self.engine.store
        if self.info.kind == COORDINATOR:
            key = self.info.conversation
            target = store.conversation_target(COORDINATOR, key) if key else None
            return COORDINATOR, key, target
        workers = store.workers(ACTIVE_WORKER_STATES)  # the caller is running
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
