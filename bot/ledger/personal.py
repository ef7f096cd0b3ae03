"""What one person sees of the bot's work: their own conversations' (docs/security.md).

`/switchboard status` and Slack's App Home answer a person, not an operator: they show
the workers, open questions, pending approvals and triggers of the conversations that
person spoke in, and only a count of everyone else's. An approval shows its tool and
where it waits, never its id or arguments (those stay in the request's own thread).
Operators see everything on the dashboard and in `switchboard status`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bot.core.readout import ago, table
from bot.ledger.status import runtime_live
from bot.store.core import ACTIVE_WORKER_STATES, MissingTable, Store
from bot.store.trigger_rows import TriggerRow

T = TypeVar("T")
R = TypeVar("R")
ELSEWHERE = (
    "Elsewhere: {workers} worker(s), {questions} open question(s), {approvals} pending "
    "approval(s) and {triggers} trigger(s) belong to other conversations (operators see "
    "them on the dashboard)."
)


@dataclass(slots=True)
class Mine:
    """(name, state, task, since) of workers; (who asks, question, where, since) of open
    questions; (who asks, tool, where, since) of pending approvals; (id, schedule, action,
    where) of triggers: this person's, and how many of each are someone else's."""

    workers: list[tuple[str, str, str, float]] = field(default_factory=list)
    questions: list[tuple[str, str, str, float]] = field(default_factory=list)
    approvals: list[tuple[str, str, str, float]] = field(default_factory=list)
    triggers: list[tuple[str, str, str, str]] = field(default_factory=list)
    others: dict[str, int] = field(default_factory=dict)

    @property
    def elsewhere(self) -> str:
        """One line counting the rest, or "" when there is none."""
        if not any(self.others.values()):
            return ""
        return ELSEWHERE.format(**{k: self.others.get(k, 0) for k in _KINDS})


_KINDS = ("workers", "questions", "approvals", "triggers")


def mine(store: Store, conversations: Collection[str], names: dict[str, str]) -> Mine:
    """The work of `conversations` (those a person spoke in); `names` shows a worker id
    as its name."""
    found = Mine()
    workers = store.agents.workers(ACTIVE_WORKER_STATES)
    own = {w.id for w in workers if w.origin_conversation in conversations}
    found.workers = _split(found, "workers", workers, lambda w: w.id in own,
                           lambda w: (w.name, w.status, w.task, w.updated_at))  # fmt: skip
    found.questions = _split(
        found, "questions", store.agents.open_questions(),
        lambda q: q.worker in own or q.conversation in conversations,
        lambda q: (names.get(q.worker, q.worker), q.question, q.target, q.asked_at),
    )  # fmt: skip
    found.approvals = _split(
        found, "approvals", store.approvals.pending(),
        lambda a: a.conversation in conversations,
        lambda a: (a.speaker, a.tool, a.target, a.requested_at),
    )  # fmt: skip
    found.triggers = _split(
        found, "triggers", _triggers(store), lambda r: r.conversation in conversations,
        lambda r: (r.id, r.spec.describe(), r.spec.action,
                   r.spec.deliver_to or r.origin_target or "home"),
    )  # fmt: skip
    return found


def _split(
    found: Mine, kind: str, rows: Sequence[T], ours: Callable[[T], bool], shown: Callable[[T], R]
) -> list[R]:
    """The rows of `kind` that are ours, shown; the others counted in `found`."""
    kept = [shown(r) for r in rows if ours(r)]
    found.others[kind] = len(rows) - len(kept)
    return kept


def _triggers(store: Store) -> list[TriggerRow]:
    try:
        return store.triggers.active()
    except MissingTable:  # the trigger engine never ran on this data dir
        return []


def personal_status(store: Store, conversations: Collection[str], names: dict[str, str]) -> str:
    """`/switchboard status` for one person: the bot's state, their work, channel health."""
    work = mine(store, conversations, names)
    running = "running" if runtime_live(store) else "not running"
    parts = [f"Switchboard: {running}. Your conversations' work:"]
    parts += [
        _table("Workers", ["name", "state", "task", "active"],
               [[n, s, t, ago(at)] for n, s, t, at in work.workers]),
        _table("Open questions", ["worker", "question", "asked in", "asked"],
               [[w, q, at_, ago(t)] for w, q, at_, t in work.questions]),
        _table("Pending approvals", ["asks", "tool", "waits in", "asked"],
               [[w, tool, at_, ago(t)] for w, tool, at_, t in work.approvals]),
        _table("Triggers", ["id", "schedule", "action", "to"], [list(t) for t in work.triggers]),
        _table("Channels", ["channel", "state", "detail"],
               [[c, s, d] for c, s, d, _ in store.health()]),
    ]  # fmt: skip
    return "\n\n".join(filter(None, [*parts, work.elsewhere]))


def _table(title: str, headers: list[str], rows: Sequence[Sequence[object]]) -> str:
    return f"{title}: none" if not rows else f"{title}\n" + table(headers, rows)
