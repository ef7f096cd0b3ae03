"""The store's read views for the operator surface: pages of workers and
conversations, outbox depth. Paged and aggregated in SQL, so the dashboard and
`/metrics` stay fast with thousands of workers and a long history.

Part of the store (the only code that speaks SQL): `Store.views` is one of these.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bot.core.messages import Inbound, Outbound
from bot.store.schema import WorkerRow, decode_inbound, decode_outbound, decode_worker
from bot.store.sql import Sql

_WORKER_COLUMNS = (
    "id, name, task, status, origin_conversation, origin_target, turns, state,"
    " error, created_at, updated_at"
)


@dataclass(slots=True)
class ConversationInfo:
    agent: str
    key: str
    target: str | None
    updated_at: float
    size: int  # bytes of stored transcript


class StoreViews:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def worker_counts(self) -> dict[str, int]:
        rows = self.sql.execute("SELECT status, COUNT(*) FROM workers GROUP BY status")
        return {row[0]: row[1] for row in rows}

    def workers_page(self, offset: int, limit: int) -> list[WorkerRow]:
        """Active workers first (running, parked, idle), then the rest, newest activity first."""
        rows = self.sql.execute(
            f"SELECT {_WORKER_COLUMNS} FROM workers ORDER BY"
            " status NOT IN ('running', 'parked', 'idle'), updated_at DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return self.sql.decode("workers", rows, decode_worker)

    def worker_names(self, ids: Collection[str]) -> dict[str, str]:
        """Workers' names as given, by id, for the ids asked (the dashboard's labels)."""
        wanted = sorted(set(ids))[:1000]
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = self.sql.execute(
            f"SELECT id, name FROM workers WHERE id IN ({marks})", tuple(wanted)
        )
        return {row[0]: row[1] for row in rows}

    def outbox_pending(self) -> tuple[int, float | None]:
        """How many deliveries wait, and since when the oldest one has."""
        row = self.sql.execute(
            "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE status = 'pending'"
        ).fetchone()
        return int(row[0]), row[1]

    def conversation_count(self) -> int:
        return int(self.sql.execute("SELECT COUNT(*) FROM conversations").fetchone()[0])

    def conversations_page(self, offset: int, limit: int) -> list[ConversationInfo]:
        rows = self.sql.execute(
            "SELECT c.agent, c.key, c.target, c.updated_at, (SELECT COALESCE(SUM(LENGTH("
            "m.message)), 0) FROM conversation_messages m WHERE m.agent = c.agent"
            " AND m.key = c.key) FROM conversations c"
            " ORDER BY c.updated_at DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [ConversationInfo(*row) for row in rows]

    def conversations_mark(self) -> tuple[int, float]:
        """How many conversations there are and the newest activity: while both stay
        the same, no conversation changed (each save moves `updated_at` forward)."""
        row = self.sql.execute("SELECT COUNT(*), MAX(updated_at) FROM conversations").fetchone()
        return int(row[0]), float(row[1] or 0.0)

    def conversation_stamps(self, limit: int) -> list[tuple[str, str, str | None, float]]:
        """(agent, key, target, updated_at) of the newest `limit` conversations, newest
        first: no transcript is read (the dashboard's index asks what changed)."""
        rows = self.sql.execute(
            "SELECT agent, key, target, updated_at FROM conversations"
            " ORDER BY updated_at DESC LIMIT ?",
            (limit,),
        )
        return [(row[0], row[1], row[2], row[3]) for row in rows]

    def inbound_message(self, channel: str, message_id: str) -> Inbound | None:
        """A journaled message by its channel and platform id."""
        rows = self.sql.execute(
            "SELECT id, payload FROM inbound WHERE channel = ? AND message_id = ?",
            (channel, message_id),
        )
        found = self.sql.decode("inbound", rows, decode_inbound)
        return found[0][1] if found else None

    def said_to(self, target: str, since: float, limit: int) -> list[tuple[str, Outbound]]:
        """(status, message) of what agents queued for `target` since `since`, oldest
        first: sent, pending or failed."""
        rows = self.sql.execute(
            "SELECT seq, payload, status FROM outbox WHERE target = ? AND created_at >= ?"
            " ORDER BY seq LIMIT ?",
            (target, since, limit),
        )
        return self.sql.decode("outbox", rows, lambda r: (r[2], decode_outbound(r)[1]))

    def usage_per_hour(self, since: float, until: float) -> dict[int, tuple[int, float]]:
        """Model calls and priced cost per hour in [since, until): {epoch hour: (calls, usd)}."""
        rows = self.sql.execute(
            "SELECT CAST(at / 3600 AS INTEGER), COUNT(*), COALESCE(SUM(cost_usd), 0.0)"
            " FROM llm_usage WHERE at >= ? AND at < ? GROUP BY 1",
            (since, until),
        )
        return {int(row[0]): (int(row[1]), float(row[2])) for row in rows}

    def inbound_per_hour(self, since: float, until: float) -> dict[tuple[int, str], int]:
        """Messages people sent in [since, until), per epoch hour and channel kind."""
        rows = self.sql.execute(
            "SELECT CAST(received_at / 3600 AS INTEGER), channel, COUNT(*) FROM inbound"
            " WHERE received_at >= ? AND received_at < ? GROUP BY 1, 2",
            (since, until),
        )
        return {(int(row[0]), row[1]): int(row[2]) for row in rows}
