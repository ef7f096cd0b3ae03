"""The store's approvals table: gated tool calls, their decisions and their outcome.

Part of the store (the only code that speaks SQL): `Store.approvals` is one of these,
on the store's connection, so a request, the conversation that made it and the
message that asks a person land in one transaction. Each state change is one
guarded UPDATE (`WHERE status = ...`), which is what makes a decision count once
and an approved call start once, whatever is clicked twice or redelivered:

    pending -> approved -> running -> (settled)     a crash while running: outcome unknown
    pending -> denied   -> (settled)                 silence past the deadline: denied

`settled` is set in the checkpoint that gives the model its tool_result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.store.sql import Sql

ApprovalStatus = Literal["pending", "approved", "denied", "running"]

_COLUMNS = (
    "id, agent, conversation, speaker, tool, args, tool_use_id, target, refs, status,"
    " settled, requested_at, deadline, decided_by, reason, decided_at, held,"
    " requester, requester_id, decider_id, how"
)
#: how a decision was given (the audit log's `how`)
How = Literal["button", "reply", "email", "terminal", "dashboard", "api", "timeout"]


@dataclass(slots=True)
class ApprovalRow:
    id: str
    agent: str
    conversation: str  # the agent's conversation key (worker: its task)
    speaker: str  # who asks, as people see it
    tool: str
    args: dict[str, Any]
    tool_use_id: str
    target: str  # where the request was posted
    refs: list[str] = field(default_factory=list)
    status: ApprovalStatus = "pending"
    settled: bool = False
    requested_at: float = field(default_factory=time.time)
    deadline: float | None = None
    decided_by: str | None = None
    reason: str | None = None
    decided_at: float | None = None
    #: the other tool results of the step and the mail taken meanwhile
    held: dict[str, Any] = field(default_factory=dict)
    #: the person whose conversation asked for the call (resolved name, platform id)
    requester: str | None = None
    requester_id: str | None = None
    #: the decider's platform id (`slack:U123`, `terminal`) and how they decided
    decider_id: str | None = None
    how: How | None = None


def _decode(r: Any) -> ApprovalRow:
    return ApprovalRow(
        r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], json.loads(r[8]), r[9],
        bool(r[10]), r[11], r[12], r[13], r[14], r[15], json.loads(r[16]), r[17], r[18],
        r[19], r[20],
    )  # fmt: skip


class ApprovalRows:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def add(self, row: ApprovalRow) -> None:
        self.sql.execute(
            f"INSERT INTO approvals ({_COLUMNS}) VALUES ({','.join('?' * 21)})"
            " ON CONFLICT DO NOTHING",
            (
                row.id, row.agent, row.conversation, row.speaker, row.tool,
                json.dumps(row.args), row.tool_use_id, row.target, json.dumps(row.refs),
                row.status, int(row.settled), row.requested_at, row.deadline, row.decided_by,
                row.reason, row.decided_at, json.dumps(row.held), row.requester,
                row.requester_id, row.decider_id, row.how,
            ),
        )  # fmt: skip

    def get(self, approval_id: str) -> ApprovalRow | None:
        rows = self.sql.execute(
            f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
        ).fetchall()
        found = self.sql.decode("approvals", rows, _decode)
        return found[0] if found else None

    def pending(self) -> list[ApprovalRow]:
        rows = self.sql.execute(
            f"SELECT {_COLUMNS} FROM approvals WHERE status = 'pending' ORDER BY requested_at"
        )
        return self.sql.decode("approvals", rows, _decode)

    def unsettled(self, agent: str, conversation: str | None = None) -> list[ApprovalRow]:
        """The agent's gated calls whose tool_result the model has not had yet."""
        rows = self.sql.execute(
            f"SELECT {_COLUMNS} FROM approvals WHERE settled = 0 AND agent = ?"
            " ORDER BY requested_at",
            (agent,),
        )
        found = self.sql.decode("approvals", rows, _decode)
        return [r for r in found if conversation is None or r.conversation == conversation]

    def decide(
        self, approval_id: str, approve: bool, who: str, reason: str | None,
        decider_id: str | None = None, how: How | None = None,
    ) -> bool:  # fmt: skip
        """Record the decision; False when it was decided before (the first one counts)."""
        cur = self.sql.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?,"
            " decider_id = ?, how = ? WHERE id = ? AND status = 'pending'",
            (
                "approved" if approve else "denied", who, reason, time.time(), decider_id, how,
                approval_id,
            ),
        )  # fmt: skip
        return cur.rowcount == 1

    def start(self, approval_id: str) -> bool:
        """Claim the approved call to run it now; False unless it is approved and unclaimed."""
        cur = self.sql.execute(
            "UPDATE approvals SET status = 'running' WHERE id = ? AND status = 'approved'",
            (approval_id,),
        )
        return cur.rowcount == 1

    def settle(self, approval_id: str) -> None:
        self.sql.execute("UPDATE approvals SET settled = 1 WHERE id = ?", (approval_id,))

    def add_refs(self, approval_id: str, refs: list[str]) -> list[str]:
        row = self.get(approval_id)
        if row is None:
            return []
        merged = list(dict.fromkeys([*row.refs, *refs]))
        self.sql.execute(
            "UPDATE approvals SET refs = ? WHERE id = ?", (json.dumps(merged), approval_id)
        )
        return merged
