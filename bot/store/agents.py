"""The store's agent tables: LLM conversations, workers and their open questions.

Part of the store (the only code that speaks SQL): `Store.agents` is one of these, on
the store's connection and inside its transactions (a step's checkpoint saves the
conversation, the worker row and the question it opened in one commit).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.core.messages import BusMessage
from bot.store.schema import (
    QuestionRow,
    QuestionStatus,
    WorkerRow,
    WorkerStatus,
    decode_question,
    decode_worker,
)
from bot.store.sql import Sql

log = logging.getLogger(__name__)

#: messages one INSERT writes (a conversation moved here, or rewritten after a compaction,
#: is written in a few statements, each well under either backend's bound on parameters)
ROWS_PER_INSERT = 100


#: conversations whose last load met a message that did not decode, remembered until
#: their next save (which then writes them whole); corruption is rare, the bound a backstop
AFRESH_MAX = 1_000


class AgentTables:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql
        #: (agent, key) of each conversation that starts afresh after a corrupt row: its
        #: stored fingerprints cannot be trusted (a row's bytes changed, its digest did
        #: not), so its next save keeps none. Bounded by AFRESH_MAX.
        self._afresh: set[tuple[str, str]] = set()

    # -- conversations ---------------------------------------------------------------
    def save_conversation(
        self, agent: str, key: str, messages: Sequence[Mapping[str, Any]], target: str | None
    ) -> None:
        """Save a conversation's messages (the agents' typed transcript), one JSON row each:
        the stored rows that still match the start of `messages` stay, the rest are
        written anew (a step's checkpoint writes what it added, not the whole transcript;
        a compaction or a repair that changed an earlier message rewrites from there)."""
        texts = [json.dumps(m) for m in messages]
        digests = [_digest(t) for t in texts]
        kept = 0
        stored = self.sql.execute(
            "SELECT digest FROM conversation_messages WHERE agent = ? AND key = ? ORDER BY seq",
            (agent, key),
        ).fetchall()
        if (agent, key) in self._afresh:
            self._afresh.discard((agent, key))
        else:
            for (old,), new in zip(stored, digests, strict=False):
                if old != new:
                    break
                kept += 1
        if len(stored) > kept:
            self.sql.execute(
                "DELETE FROM conversation_messages WHERE agent = ? AND key = ? AND seq >= ?",
                (agent, key, kept),
            )
        for first in range(kept, len(texts), ROWS_PER_INSERT):
            rows = range(first, min(first + ROWS_PER_INSERT, len(texts)))
            self.sql.execute(
                "INSERT INTO conversation_messages (agent, key, seq, digest, message) VALUES "
                + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows)),
                tuple(v for i in rows for v in (agent, key, i, digests[i], texts[i])),
            )
        self.sql.execute(
            "INSERT INTO conversations (agent, key, target, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (agent, key) DO UPDATE SET updated_at = excluded.updated_at,"
            " target = COALESCE(excluded.target, conversations.target)",
            (agent, key, target, time.time()),
        )

    def load_conversation(self, agent: str, key: str) -> tuple[list[dict[str, Any]], str | None]:
        row = self.sql.execute(
            "SELECT target FROM conversations WHERE agent = ? AND key = ?", (agent, key)
        ).fetchone()
        if row is None:
            return [], None
        rows = self.sql.execute(
            "SELECT message FROM conversation_messages WHERE agent = ? AND key = ? ORDER BY seq",
            (agent, key),
        )
        try:
            return [json.loads(raw) for (raw,) in rows], row[0]
        except json.JSONDecodeError:
            log.error("conversation %s/%s is corrupt; starting it afresh", agent, key)
            if len(self._afresh) < AFRESH_MAX:
                self._afresh.add((agent, key))
            return [], row[0]

    def conversation_target(self, agent: str, key: str) -> str | None:
        row = self.sql.execute(
            "SELECT target FROM conversations WHERE agent = ? AND key = ?", (agent, key)
        ).fetchone()
        return row[0] if row else None

    def conversations_since(self, since: float) -> list[tuple[str, str, list[dict[str, Any]]]]:
        """(agent, key, messages) of every conversation saved at or after `since`
        (the team knowledge consolidation reads what changed); corrupt ones skipped."""
        rows = self.sql.execute(
            "SELECT c.agent, c.key, m.message FROM conversations c"
            " JOIN conversation_messages m ON m.agent = c.agent AND m.key = c.key"
            " WHERE c.updated_at >= ? ORDER BY c.updated_at, c.agent, c.key, m.seq",
            (since,),
        )
        out: list[tuple[str, str, list[dict[str, Any]]]] = []
        corrupt: tuple[str, str] | None = None
        for agent, key, raw in rows:
            if (agent, key) == corrupt:
                continue
            if not out or out[-1][:2] != (agent, key):
                out.append((agent, key, []))
            try:
                out[-1][2].append(json.loads(raw))
            except json.JSONDecodeError:
                corrupt = (agent, key)
                out.pop()
        return out

    def unfinished_conversations(self, agent: str) -> list[str]:
        """Keys whose last message awaits the model, or whose last answer's tool calls never
        ran (a crash interrupted the turn)."""
        rows = self.sql.execute(
            "SELECT m.key, m.message FROM (SELECT key, MAX(seq) AS last"
            " FROM conversation_messages WHERE agent = ? GROUP BY key) l"
            " JOIN conversation_messages m ON m.agent = ? AND m.key = l.key AND m.seq = l.last",
            (agent, agent),
        )
        keys = []
        for key, raw in rows:
            try:
                last = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if _interrupted(last):
                keys.append(key)
        return keys

    # -- workers ---------------------------------------------------------------------
    def upsert_worker(self, row: WorkerRow) -> None:
        self.sql.execute(
            "INSERT INTO workers (id, name, task, status, origin_conversation, origin_target,"
            " turns, state, error, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (id) DO UPDATE SET name=excluded.name, task=excluded.task,"
            " status=excluded.status, origin_conversation=excluded.origin_conversation,"
            " origin_target=excluded.origin_target, turns=excluded.turns, state=excluded.state,"
            " error=excluded.error, updated_at=excluded.updated_at",
            (
                row.id,
                row.name,
                row.task,
                row.status,
                row.origin_conversation,
                row.origin_target,
                row.turns,
                json.dumps(row.parked.to_json() if row.parked else {}),
                row.error,
                row.created_at,
                time.time(),
            ),
        )

    def workers(self, statuses: tuple[WorkerStatus, ...] | None = None) -> list[WorkerRow]:
        sql = (
            "SELECT id, name, task, status, origin_conversation, origin_target, turns, state,"
            " error, created_at, updated_at FROM workers"
        )
        args: tuple[Any, ...] = ()
        if statuses:
            sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
            args = statuses
        rows = self.sql.execute(sql + " ORDER BY created_at", args)
        return self.sql.decode("workers", rows, decode_worker)

    # -- the person a worker owes an answer ------------------------------------------
    def keep_asker(self, worker_id: str, msg: BusMessage | None) -> None:
        """The person's message a worker took in and has not answered yet (None: none),
        kept beside its conversation so that after a restart the answer still reaches
        them, in their thread."""
        key = f"asker:{worker_id}"
        if msg is None:
            self.sql.execute("DELETE FROM kv WHERE key = ?", (key,))
            return
        value = json.dumps(msg.to_json())
        self.sql.execute(
            "INSERT INTO kv (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def asker_of(self, worker_id: str) -> BusMessage | None:
        row = self.sql.execute(
            "SELECT value FROM kv WHERE key = ?", (f"asker:{worker_id}",)
        ).fetchone()
        try:
            return BusMessage.from_json(json.loads(row[0])) if row else None
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: the answer stays in the task, as before

    # -- open questions --------------------------------------------------------------
    def add_question(self, q: QuestionRow) -> None:
        self.sql.execute(
            "INSERT INTO questions (id, worker, question, target, conversation, refs,"
            " status, asked_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET"
            " worker = excluded.worker, question = excluded.question, target = excluded.target,"
            " conversation = excluded.conversation, refs = excluded.refs,"
            " status = excluded.status, asked_at = excluded.asked_at, answered_at = NULL,"
            " answer = NULL",
            (
                q.id,
                q.worker,
                q.question,
                q.target,
                q.conversation,
                json.dumps(q.refs),
                q.status,
                q.asked_at,
            ),
        )

    def add_question_refs(self, question_id: str, refs: list[str]) -> None:
        row = self.sql.execute("SELECT refs FROM questions WHERE id = ?", (question_id,)).fetchone()
        if row is not None:
            merged = list(dict.fromkeys([*json.loads(row[0]), *refs]))
            self.sql.execute(
                "UPDATE questions SET refs = ? WHERE id = ?", (json.dumps(merged), question_id)
            )

    def close_question(
        self, question_id: str, status: QuestionStatus, answer: str | None = None
    ) -> None:
        self.sql.execute(
            "UPDATE questions SET status = ?, answer = ?, answered_at = ? WHERE id = ?",
            (status, answer, time.time(), question_id),
        )

    def open_questions(self) -> list[QuestionRow]:
        rows = self.sql.execute(
            "SELECT id, worker, question, target, conversation, refs, status, asked_at"
            " FROM questions WHERE status = 'open' ORDER BY asked_at"
        )
        return self.sql.decode("questions", rows, decode_question)


def _digest(text: str) -> str:
    """A stored message's fingerprint: a save keeps the rows whose fingerprint matches."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _interrupted(last: dict[str, Any]) -> bool:
    content = last.get("content")
    if last.get("role") == "user":
        return True
    return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)
