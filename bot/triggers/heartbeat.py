"""The heartbeat's quiet rule: wake the agent only when something it watches changed.

Deterministic, no model call. A heartbeat watches some of five sources (all by
default) and compares them with what it saw at its previous run (kept in the
trigger's `state`):

- `messages`: a person's message to the bot or its workers arrived (a routed
  `message.received`; one refused or addressed to nobody does not count);
- `workers`: a worker completed, failed, stopped, parked, resumed or got stuck
  (`worker.stuck`: no progress for SWITCHBOARD_STUCK_AFTER);
- `questions`: the set of open questions differs, or one has waited past
  SWITCHBOARD_REMIND_AFTER (then once more each day it still waits);
- `outbox`: a delivery failed for good (`outbox.failed`);
- `triggers`: a trigger missed a run or failed.

Nothing changed: the run is quiet (an event `trigger.quiet`, nothing posted).
Something changed: the agent is woken with its checklist and the list of changes.

A heartbeat made in a person's conversation looks only at that conversation (its
messages, its workers and their questions; `only`); the operator's at everything.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.core.events import Event, read_events
from bot.core.readout import when
from bot.store.core import Store
from config.settings import Database

EVENT_SOURCES: dict[str, tuple[str, ...]] = {
    "messages": ("message.received",),
    "workers": (
        "worker.completed",
        "worker.failed",
        "worker.stopped",
        "worker.parked",
        "worker.resumed",
        "worker.stuck",
    ),
    "outbox": ("outbox.failed",),
    "triggers": ("trigger.missed", "trigger.failed"),
}


@dataclass(slots=True)
class Look:
    """What one heartbeat run found."""

    since: float
    changes: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def quiet(self) -> bool:
        return not self.changes


def look(
    where: Database,
    events_path: Path | None,
    state: dict[str, Any],
    watch: list[str],
    now: float,
    remind_after: float = 4 * 3600.0,
    only: str | None = None,
) -> Look:
    """Compare the watched sources with the previous run's `state`; with `only`, those
    of that conversation alone.

    Blocking (reads the event log file): run it in a thread. It opens its own
    read-only connection, so it never shares the loop's connection or transaction.
    """
    since = float(state.get("last_run", now))
    result = Look(since, state={"last_run": now})
    types = {t: src for src, ts in EVENT_SOURCES.items() if src in watch for t in ts}
    store = Store(where, readonly=True) if only is not None or "questions" in watch else None
    try:
        ours = _ours(store, only)
        found = [
            e for e in _events(events_path, since, now)
            if e.type in types and _concerns(e) and ours(e.data.get("conversation"), e.agent_id)
        ]  # fmt: skip
        result.changes.extend(_summarise(found))
        if store is not None and "questions" in watch:
            _questions(store, state, result, now, remind_after, ours)
    finally:
        if store is not None:
            store.close()
    return result


Ours = Callable[[Any, str], bool]


def _ours(store: Store | None, only: str | None) -> Ours:
    """Whether an event (its conversation field, its agent) or a question (its place,
    its worker) is of the conversation `only`; everything when `only` is None."""
    if only is None or store is None:
        return lambda conversation, agent: True
    origins = {w.id: w.origin_conversation for w in store.agents.workers()}
    return lambda conversation, agent: (
        bool(only) and only in (conversation, origins.get(agent.lower(), ""))
    )


def _concerns(event: Event) -> bool:
    """A person's message counts when it was routed to the bot or one of its workers."""
    return event.type != "message.received" or bool(event.data.get("to"))


def _events(path: Path | None, since: float, until: float) -> list[Event]:
    return [] if path is None else list(read_events(path, since, until))


def _summarise(found: list[Event]) -> list[str]:
    lines = []
    received = [e for e in found if e.type == "message.received"]
    if received:
        where = Counter(str(e.data.get("conversation", "?")) for e in received)
        lines.append(
            f"{len(received)} message(s) from people in: "
            + ", ".join(f"{c} ({n})" for c, n in where.most_common(5))
        )
    for e in found:
        if e.type.startswith("worker."):
            detail = e.data.get("result") or e.data.get("error") or e.data.get("status") or ""
            lines.append(f"worker {e.agent_id} {e.type.split('.', 1)[1]}: {str(detail)[:300]}")
        elif e.type == "outbox.failed":
            lines.append(f"delivery to {e.data.get('target')} failed: {e.data.get('error')}")
        elif e.type.startswith("trigger."):
            lines.append(f"trigger {e.data.get('trigger_id')} {e.type.split('.', 1)[1]}")
    return lines


def _questions(
    store: Store, state: dict[str, Any], result: Look, now: float, remind_after: float,
    ours: Ours,
) -> None:  # fmt: skip
    open_now = {q.id: q for q in store.agents.open_questions() if ours(q.conversation, q.worker)}
    result.state["questions"] = sorted(open_now)
    before = set(state.get("questions", []))
    new = [q for qid, q in open_now.items() if qid not in before]
    gone = before - set(open_now)
    for q in new:
        result.changes.append(f"open question from {q.worker} ({_ago(q.asked_at)}): {q.question}")
    if gone:
        result.changes.append(f"{len(gone)} question(s) answered or closed")
    aged_before: dict[str, int] = state.get("aged", {})
    aged = {qid: _age_step(now - q.asked_at, remind_after) for qid, q in open_now.items()}
    result.state["aged"] = {qid: n for qid, n in aged.items() if n}
    for qid, step in aged.items():
        q = open_now[qid]
        if step > aged_before.get(qid, 0) and qid in before:
            waited = int((now - q.asked_at) // 3600)
            result.changes.append(
                f"question from {q.worker} still unanswered after {waited} h: {q.question}"
            )


def _age_step(age: float, remind_after: float) -> int:
    """0 before REMIND_AFTER, then 1, and one more for each day after it."""
    return 0 if age < remind_after else 1 + int((age - remind_after) // 86400)


def _ago(ts: float) -> str:
    minutes = int((time.time() - ts) // 60)
    return f"asked {minutes} min ago" if minutes else "just asked"


def wake_note(look: Look, checklist: list[str], interval: float) -> str:
    """The text added to the heartbeat's action when the agent is woken."""
    since = when(look.since)
    parts = [f"(Heartbeat, every {interval:g}s.)"]
    if checklist:
        parts.append("Checklist:\n" + "\n".join(f"- {item}" for item in checklist))
    parts.append(f"What changed since {since}:\n" + "\n".join(f"- {c}" for c in look.changes))
    return "\n".join(parts)
