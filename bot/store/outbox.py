"""The store's outbox tables: messages to people, queued then delivered, and the attempt
records of their parts (bot/outbox/attempts.py).

Part of the store (the only code that speaks SQL): `Store.outbox` is one of these, on
the store's connection and inside its transactions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection
from typing import Any

from bot.core.channel import AttemptRow
from bot.core.messages import Outbound
from bot.store.schema import OutboxRow, decode_attempt, decode_outbound, decode_outbox
from bot.store.sql import Sql


class OutboxTables:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    # -- outbox ----------------------------------------------------------------------
    def enqueue(self, msg: Outbound) -> None:
        now = time.time()
        self.sql.execute(
            "INSERT INTO outbox (id, target, payload, next_at, created_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (msg.id, str(msg.target), json.dumps(msg.to_json()), now, now),
        )
        self.sql.notify("outbox")

    def new_outbox_rows(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """(seq, target) of pending rows queued after `after_seq`, oldest first."""
        rows = self.sql.execute(
            "SELECT seq, target FROM outbox WHERE seq > ? AND status = 'pending'"
            " ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [(row[0], row[1]) for row in rows]

    def pending_outbox(self, target: str, limit: int) -> list[OutboxRow]:
        """The first pending rows of one target, in the order they were queued."""
        rows = self.sql.execute(
            "SELECT seq, payload, attempts, next_at FROM outbox"
            " WHERE target = ? AND status = 'pending' ORDER BY seq LIMIT ?",
            (target, limit),
        )
        return self.sql.decode("outbox", rows, decode_outbox)

    def outbox_sent(self, seq: int, receipt: dict[str, Any]) -> None:
        with self.sql.tx():  # the row's attempt records go with it: it will not be tried again
            self.sql.execute(
                "UPDATE outbox SET status = 'sent', sent_at = ?, receipt = ? WHERE seq = ?",
                (time.time(), json.dumps(receipt), seq),
            )
            self._drop_attempts(seq)

    def outbox_retry(self, seq: int, next_at: float, error: str) -> None:
        self.sql.execute(
            "UPDATE outbox SET attempts = attempts + 1, next_at = ?, error = ? WHERE seq = ?",
            (next_at, error, seq),
        )

    def outbox_due_now(self) -> None:
        """Every pending row due at once: a new leader's, whose retry times were written
        by another node's clock, maybe a minute off (bot/leadership.py)."""
        self.sql.execute("UPDATE outbox SET next_at = 0 WHERE status = 'pending' AND next_at > 0")

    def outbox_failed(self, seq: int, error: str) -> None:
        with self.sql.tx():
            self.sql.execute(
                "UPDATE outbox SET status = 'failed', attempts = attempts + 1, error = ?"
                " WHERE seq = ?",
                (error, seq),
            )
            self._drop_attempts(seq)

    # -- attempt records (bot/outbox/attempts.py) --------------------------------------------
    def attempts(self, outbox_id: str) -> list[AttemptRow]:
        """The parts of one outbound message tried so far. A corrupt record is
        quarantined once and reads as `trying` with no detail: the part may exist on
        the platform, so the channel looks before posting it again."""
        rows = list(
            self.sql.execute(
                "SELECT rowid, part, state, detail, at FROM attempts WHERE outbox_id = ?",
                (outbox_id,),
            )
        )
        good = self.sql.decode("attempts", [r for r in rows if r[2] != "corrupt"], decode_attempt)
        known = {a.part for a in good}
        return good + [AttemptRow(str(r[1]), "trying", {}, 0.0) for r in rows if r[1] not in known]

    def set_attempt(self, outbox_id: str, row: AttemptRow) -> None:
        self.sql.execute(
            "INSERT INTO attempts (outbox_id, part, state, detail, at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (outbox_id, part) DO UPDATE SET state = excluded.state,"
            " detail = excluded.detail, at = excluded.at",
            (outbox_id, row.part, row.state, json.dumps(row.detail), row.at),
        )

    def _drop_attempts(self, seq: int) -> None:
        self.sql.execute(
            "DELETE FROM attempts WHERE outbox_id = (SELECT id FROM outbox WHERE seq = ?)", (seq,)
        )

    def sent_between(self, since: float, until: float) -> list[tuple[float, Outbound]]:
        """(sent at, message) of every outbox row delivered in [since, until)."""
        rows = self.sql.execute(
            "SELECT seq, payload, sent_at FROM outbox WHERE status = 'sent' AND sent_at >= ?"
            " AND sent_at < ?",
            (since, until),
        )
        return self.sql.decode("outbox", rows, lambda r: (r[2], decode_outbound(r)[1]))

    def sent_to(self, targets: list[str], since: float, limit: int) -> list[tuple[float, Outbound]]:
        """(sent at, message) of the newest `limit` deliveries to any of `targets` (target
        strings) since `since`, newest first: what the bot itself said there."""
        marks = ", ".join("?" * len(targets))
        rows = self.sql.execute(
            f"SELECT seq, payload, sent_at FROM outbox WHERE target IN ({marks})"
            " AND status = 'sent' AND sent_at >= ? ORDER BY sent_at DESC LIMIT ?",
            (*targets, since, limit),
        )
        return self.sql.decode("outbox", rows, lambda r: (r[2], decode_outbound(r)[1]))

    def sent_in(
        self, conversations: Collection[str], since: float, scan: int
    ) -> list[tuple[float, Outbound]]:
        """(sent at, message) of what was delivered since `since` in any of
        `conversations` (a message of no conversation: to one of them as its target),
        newest first, among the newest `scan` deliveries. Only those rows are decoded."""
        rows = self.sql.execute(
            "SELECT seq, payload, sent_at, target FROM outbox WHERE status = 'sent'"
            " AND sent_at >= ? ORDER BY sent_at DESC LIMIT ?",
            (since, scan),
        )
        quoted = {json.dumps(c) for c in conversations}  # as the payloads write them
        wanted = [r for r in rows if _maybe_in(r[1], r[3], conversations, quoted)]
        return self.sql.decode("outbox", wanted, lambda r: (r[2], decode_outbound(r)[1]))

    def outbox_pending_count(self, target: str) -> int:
        row = self.sql.execute(
            "SELECT COUNT(*) FROM outbox WHERE target = ? AND status = 'pending'", (target,)
        ).fetchone()
        return int(row[0])

    def outbox_counts(self) -> dict[str, int]:
        """Rows by status, each counted in its own partial index (none holds them all)."""
        counts = {
            "pending": "SELECT COUNT(*) FROM outbox WHERE status = 'pending'",
            "sent": "SELECT COUNT(*) FROM outbox WHERE status = 'sent'",
        }
        found = {k: int(self.sql.execute(q).fetchone()[0]) for k, q in counts.items()}
        rows = self.sql.execute(
            "SELECT status, COUNT(*) FROM outbox WHERE status IN ('failed', 'corrupt')"
            " GROUP BY status"
        )
        return {k: n for k, n in [*found.items(), *((r[0], int(r[1])) for r in rows)] if n}


#: a payload's own `conversation` (json.dumps writes it so; inside a string its quotes
#: would be escaped, so text cannot fake it)
_CONVERSATION = re.compile(r'"conversation": ("(?:[^"\\]|\\.)*"|null)')


def _maybe_in(payload: str, target: str, conversations: Collection[str], quoted: set[str]) -> bool:
    """Whether a row may belong to `conversations`, read without decoding it (a payload
    not written as expected is decoded, and judged, by the caller)."""
    found = _CONVERSATION.search(payload)
    if found is None:
        return True
    value = found.group(1)
    return target in conversations if value == "null" else value in quoted
