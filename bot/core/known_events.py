"""The events Switchboard emits, and the fields each carries: what an `on_event`
trigger may name. A pattern that matches none of them is refused with this list, and
a filter on a field none of the matched events has is refused with their fields
(`agent_id`, the emitting agent, is every event's). tests/triggers/test_trigger_rules.py
checks this table against every `emit` in the code, so it cannot fall behind.
"""

from __future__ import annotations

import fnmatch

#: every event that carries more than the fields listed (extra facts passed through)
OPEN_FIELDS = frozenset({"message.refused"})
_MCP = ("reason", "server", "tools")
_TRIGGER_ENDED = ("trigger_id",)

KNOWN_EVENTS: dict[str, tuple[str, ...]] = {
    "access.refused": ("action", "conversation", "outcome", "person", "person_id", "resource"),
    "agent.started": ("inbound", "mail", "pid", "workers"),
    "approval.decided": (
        "approval_id",
        "approved",
        "args_digest",
        "by",
        "conversation",
        "decider",
        "decider_id",
        "how",
        "outcome",
        "person",
        "person_id",
        "reason",
        "tool",
    ),
    "approval.requested": (
        "approval_id",
        "args_digest",
        "conversation",
        "outcome",
        "person",
        "person_id",
        "target",
        "tool",
    ),
    "budget.exceeded": ("limit", "spent"),
    "budget.warning": ("limit", "spent", "share"),
    "budget.resumed": ("spent",),
    "channel.caught_up": ("forgotten", "messages", "places"),
    "channel.connected": ("mode",),
    "channel.health": ("detail", "state"),
    "channel.reconnecting": ("delay", "error"),
    "channel.uidvalidity": ("new", "old"),
    "conversation.fresh": ("archived", "conversation", "messages", "parked"),
    "file.fetch_failed": ("error", "name"),
    "file.saved": ("name", "path", "size"),
    "human.question": ("question_id", "target"),
    "human.response": ("question_id",),
    "llm.context_full": ("conversation",),
    "llm.continued": ("cut_calls", "stop"),
    "llm.declined": ("category", "conversation"),
    "llm.error": ("error",),
    "llm.failover": ("conversation", "error", "model", "previous", "reason"),
    "llm.thought": ("blocks", "conversation", "tokens"),
    "llm.unavailable": ("attempt", "error"),
    "mail.own_thread": ("id", "sender"),
    "mail.redirected": ("sender", "to"),
    "mcp.tool_refused": ("reason", "server", "tool"),
    "memory.captured": ("files", "person"),
    "memory.compacted": (
        "archive",
        "conversation",
        "kept",
        "summarised",
        "tokens_after",
        "tokens_before",
    ),
    "memory.compaction_failed": ("conversation", "error"),
    "memory.distil_failed": ("error",),
    "memory.distilled": ("result",),
    "memory.flushed": ("conversation", "tool_calls"),
    "memory.profiles_migrated": ("profiles",),
    "memory.shared": ("files", "findings"),
    "memory.written": ("tool",),
    "message.deleted": ("channel", "id"),
    "message.duplicate": ("channel", "id"),
    "message.edited": ("channel", "id"),
    "message.quarantined": ("error", "uid"),
    "message.received": (
        "channel",
        "conversation",
        "error",
        "id",
        "question",
        "reply_to",
        "sender",
        "to",
    ),
    "message.refused": ("channel", "reason"),
    "message.sent": ("conversation", "id", "kind", "target", "trigger_id"),
    "node.clock": ("node", "offset"),
    "node.leads": ("node", "role"),
    "node.lost": ("node", "reason"),
    "operator.action": ("action", "conversation", "decider", "how", "outcome"),
    "outbox.failed": ("error", "id", "target"),
    "outbox.retry": ("attempt", "delay", "error", "target"),
    "person.timezone": ("person", "zone"),
    "stalled.reminded": ("count", "escalated", "item"),
    "scope.crossed": ("conversation", "outcome", "person", "person_id", "resource", "tool"),
    "store.corrupt": ("problem",),
    "team.consolidated": ("batches", "written"),
    "team.consolidation_failed": ("batches", "error"),
    "team.consolidation_resumed": (),
    "team.topic_refused": ("reason", "topic"),
    "tool.called": (
        "approval_id",
        "args_digest",
        "conversation",
        "error",
        "flush",
        "ms",
        "ok",
        "outcome",
        "parked",
        "person",
        "person_id",
        "tool",
    ),
    "turn.stopped": ("conversation",),
    "trigger.configured": ("new", "schedule", "trigger_id"),
    "trigger.created": ("by", "schedule", "trigger_id", "trigger_type"),
    "trigger.duplicate": ("fire_key", "trigger_id"),
    "trigger.failed": ("error", "fire_key", "trigger_id"),
    "trigger.fired": ("action", "fire_key", "target", "trigger_id", "trigger_type"),
    "trigger.internal": ("fire_key", "job"),
    "trigger.missed": ("fire_key", "late_by", "policy", "trigger_id"),
    "trigger.quiet": ("fire_key", "trigger_id"),
    "trigger.repeated_time": ("fire_key", "trigger_id"),
    "worker.completed": ("result",),
    "worker.failed": ("error",),
    "worker.recovering": ("error", "attempt"),
    "worker.parked": ("question_id",),
    "worker.reminded": ("answered",),
    "worker.resumed": ("question_id",),
    "worker.spawned": ("name", "task"),
    "worker.stopped": ("status",),
    "worker.stuck": ("doing", "idle_seconds", "name"),
    **{
        f"mcp.{state}": _MCP
        for state in ("starting", "connected", "restarting", "failed", "stopped")
    },
    **{f"trigger.{end}": _TRIGGER_ENDED for end in ("cancelled", "removed", "paused", "resumed")},
}
IGNORED_PREFIX = "trigger."  # a trigger's own events never fire triggers


def matching(pattern: str) -> list[str]:
    """The known event types a shell-style pattern (`worker.*`) matches."""
    return [t for t in KNOWN_EVENTS if fnmatch.fnmatchcase(t, pattern)]


def fields_of(types: list[str]) -> set[str] | None:
    """The fields the given event types carry; None when any carries extra facts."""
    if any(t in OPEN_FIELDS for t in types):
        return None
    return {"agent_id", *(f for t in types for f in KNOWN_EVENTS[t])}
