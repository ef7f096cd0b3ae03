"""The row types of the store and their decoders (the tables: bot/store/migrations_sql.py).

Imports nothing of the project but message types. `bot.store.core` re-exports the rows.
Each table has one decoder here (a stored row to its type, raising on a corrupt row);
the store reads every row through them, so every read gets the quarantine.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.core.channel import AttemptRow
from bot.core.messages import BusMessage, Inbound, Outbound

#: the audit line's fields after its sequence number, in column order (bot/ledger/audit.py)
AUDIT_FIELDS = (
    "at", "type", "agent", "conversation", "person", "person_id", "tool", "args_digest",
    "resource", "action", "approval_id", "decider", "decider_id", "how", "outcome",
)  # fmt: skip


#: A worker's life: `running` (thinking or waiting for mail), `parked` (waiting for a
#: person's answer), then `done`, `failed` or `stopped`; `corrupt` when its row did not
#: decode. Nothing sets a worker "idle": a running worker with no mail simply waits.
WorkerStatus = Literal["running", "parked", "done", "failed", "stopped", "corrupt"]
ACTIVE_WORKER_STATES: tuple[WorkerStatus, ...] = ("running", "parked")
#: An open question is `answered`, or `cancelled` when its worker is gone.
QuestionStatus = Literal["open", "answered", "cancelled", "corrupt"]
#: A journaled message is `pending` until routed (a crash in between: routed at start),
#: `fetching` while its files are downloaded (bot/inbox/intake.py).
InboundStatus = Literal["pending", "fetching", "routed", "corrupt", "hook"]


@dataclass(slots=True)
class ParkedState:
    """What a parked worker keeps until its answer comes: the question, the tool call
    that asked it, the results of the other calls of that turn (the asking call's last,
    a placeholder until the answer replaces it), and the mail taken in meanwhile."""

    question_id: str
    tool_use_id: str
    #: tool_result blocks (JSON), the transcript's as agents/model/blocks.py types them
    results: list[Mapping[str, Any]] = field(default_factory=list)
    later: list[dict[str, Any]] = field(default_factory=list)  # BusMessage JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "tool_use_id": self.tool_use_id,
            "results": self.results,
            "later": self.later,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ParkedState:
        return cls(
            question_id=data["question_id"],
            tool_use_id=data["tool_use_id"],
            results=list(data.get("results", [])),
            later=list(data.get("later", [])),
        )


@dataclass(slots=True)
class WorkerRow:
    id: str
    name: str
    task: str
    status: WorkerStatus
    origin_conversation: str | None
    origin_target: str | None
    turns: int = 0
    parked: ParkedState | None = None  # stored in the `state` column; `{}` when running
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@dataclass(slots=True)
class QuestionRow:
    id: str
    worker: str
    question: str
    target: str
    conversation: str | None
    refs: list[str]
    status: QuestionStatus
    asked_at: float


@dataclass(slots=True)
class OutboxRow:
    seq: int
    message: Outbound
    attempts: int
    next_at: float


@dataclass(slots=True)
class AuditLine:
    """One line of the audit log: who did what through which tool, never content."""

    seq: int
    at: float
    type: str
    agent: str
    conversation: str | None = None
    person: str | None = None
    person_id: str | None = None
    tool: str | None = None
    args_digest: str | None = None
    resource: str | None = None
    action: str | None = None
    approval_id: str | None = None
    decider: str | None = None
    decider_id: str | None = None
    how: str | None = None
    outcome: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("seq", *AUDIT_FIELDS)}


def decode_audit(r: Any) -> AuditLine:
    if not isinstance(r[1], float | int) or not r[2]:
        raise ValueError("audit line without a time or a type")
    return AuditLine(*r)


def decode_inbound(r: Any) -> tuple[int, Inbound]:
    """(id, payload) of `inbound`."""
    return r[0], Inbound.from_json(json.loads(r[1]))


def decode_mail(r: Any) -> tuple[int, BusMessage]:
    """(id, payload) of `mail`."""
    return r[0], BusMessage.from_json(json.loads(r[1]))


def decode_outbound(r: Any) -> tuple[int, Outbound]:
    """(seq, payload) of `outbox`."""
    return r[0], Outbound.from_json(json.loads(r[1]))


def decode_outbox(r: Any) -> OutboxRow:
    """(seq, payload, attempts, next_at) of `outbox`."""
    return OutboxRow(seq=r[0], message=decode_outbound(r)[1], attempts=r[2], next_at=r[3])


def decode_question(r: Any) -> QuestionRow:
    return QuestionRow(
        id=r[0],
        worker=r[1],
        question=r[2],
        target=r[3],
        conversation=r[4],
        refs=json.loads(r[5]),
        status=r[6],
        asked_at=r[7],
    )


def decode_attempt(r: Any) -> AttemptRow:
    """(rowid, part, state, detail, at)."""
    if r[2] not in ("trying", "posted"):
        raise ValueError(f"unknown attempt state {r[2]!r}")
    detail = json.loads(r[3])
    if not isinstance(detail, dict):
        raise TypeError("attempt detail is not an object")
    return AttemptRow(str(r[1]), r[2], detail, float(r[4]))


def decode_worker(r: Any) -> WorkerRow:
    return WorkerRow(
        id=r[0],
        name=r[1],
        task=r[2],
        status=r[3],
        origin_conversation=r[4],
        origin_target=r[5],
        turns=r[6],
        parked=_parked(json.loads(r[7])),
        error=r[8],
        created_at=r[9],
        updated_at=r[10],
    )


def _parked(state: dict[str, Any]) -> ParkedState | None:
    return ParkedState.from_json(state) if state else None
