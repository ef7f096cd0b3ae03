"""Durable state in one database: SQLite (WAL) in the data dir, or PostgreSQL
(SWITCHBOARD_DATABASE_URL, through bot/store/postgres.py, which speaks sqlite3's surface).

Its own tables: the inbound journal, the bus mail (durable agent mailboxes), key/value
channel state and channel health. The other tables are parts `Store` composes, each
handed the store as its narrow SQL handle (`bot/store/sql.py`), none importing this
module: the agents' (conversations, workers, questions) as `Store.agents`, the outbox
and its attempt records as `Store.outbox`, then `triggers`, `approvals`, `audit`,
`usage` and the operator's read `views`.
Everything runs on the event loop's thread; `tx()` groups writes that must land
together (a conversation checkpoint with the mail it consumed and the replies it
queued), `savepoint()` lets one part of such a group fail alone. The store is the
only code that speaks SQL, one set of statements for both backends. Every stored row is
decoded by one function per table (`bot/store/schema.py`), and a row that does not decode is
quarantined, wherever it was read.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from bot.core.changes import CHANGES
from bot.core.channel import AttemptRow
from bot.core.messages import BusMessage, Inbound
from bot.store import growth, migrations, sqlite
from bot.store.agents import AgentTables
from bot.store.approvals import ApprovalRows
from bot.store.audit import AuditRows
from bot.store.errors import MissingTable, StoreError, from_sqlite
from bot.store.lease import Leader
from bot.store.migrations import CHANNEL
from bot.store.outbox import OutboxTables
from bot.store.schema import (
    ACTIVE_WORKER_STATES,
    InboundStatus,
    OutboxRow,
    ParkedState,
    QuestionRow,
    QuestionStatus,
    WorkerRow,
    WorkerStatus,
    decode_inbound,
    decode_mail,
)
from bot.store.space import DiskWatch, out_of_space
from bot.store.triggers import TriggerRows
from bot.store.usage import UsageRows
from bot.store.views import StoreViews
from config.settings import Database, is_postgres

log = logging.getLogger(__name__)
T = TypeVar("T")
__all__ = [
    "ACTIVE_WORKER_STATES",
    "AttemptRow",
    "InboundStatus",
    "MissingTable",
    "OutboxRow",
    "ParkedState",
    "QuestionRow",
    "QuestionStatus",
    "Store",
    "StoreError",
    "WorkerRow",
    "WorkerStatus",
]


class Store:
    """The database of one bot: a SQLite file in the data dir, or PostgreSQL."""

    def __init__(
        self,
        where: Database,
        *,
        readonly: bool = False,
        report: Callable[[str], None] | None = None,
        space: DiskWatch | None = None,
    ) -> None:
        self.where = where
        self.postgres = is_postgres(where)
        self.db = (
            migrations.open_postgres(str(where), readonly)
            if self.postgres
            else (self._open_sqlite(Path(where), readonly))
        )
        self.readonly = readonly
        self._depth = 0
        self._savepoints = 0
        #: the longest wait for the write lock (`BEGIN`), and all waits summed, in seconds,
        #: since `waited` last read them
        self._waited = (0.0, 0.0)
        self._report = report or (lambda problem: None)
        #: PostgreSQL: tell the leader what this node wrote (a follower's journal, outbox
        #: and decisions); the leader listens (bot/store/lease.py)
        self.announce = False
        self.agents = AgentTables(self)
        self.outbox = OutboxTables(self)
        self.triggers = TriggerRows(self)
        self.usage = UsageRows(self)
        self.views = StoreViews(self)
        self.approvals = ApprovalRows(self)
        self.audit = AuditRows(self)
        #: the data dir's disk (bot/store/space.py): new messages wait while it is full
        self.space = space
        #: SQLite: the thread that checkpoints the WAL off the event loop (`keep_wal`)
        self.wal: growth.WalKeeper | None = None

    @staticmethod
    def _open_sqlite(path: Path, readonly: bool) -> Any:
        try:
            db = migrations.connect(path, readonly)
        except sqlite3.Error as exc:
            raise from_sqlite(exc) from exc
        if not readonly:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            growth.tune_sqlite(db)  # the WAL stays bounded (bot/store/growth.py)
            migrations.migrate(db, path)
        return sqlite.Connection(db)

    def now(self) -> float:
        """Unix seconds by the database's clock on PostgreSQL (one clock for every node,
        whatever a node's own says), by this host's on SQLite."""
        if not self.postgres:
            return time.time()
        return float(self._x("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])

    def leader(self) -> Leader:
        """Who leads, as the `leader` row of PostgreSQL says (SQLite: nobody recorded)."""
        if not self.postgres:
            return Leader(None, None, 0)
        row = self._x("SELECT node, since, generation FROM leader WHERE name = 'bot'").fetchone()
        return Leader(row[0], row[1], int(row[2])) if row else Leader(None, None, 0)

    def notify(self, topic: str) -> None:
        """Inside a transaction, on PostgreSQL with `announce` on: wake the leader at the
        commit (`inbound`, `outbox`, `approval:<id>`)."""
        if self.announce:
            self._x("SELECT pg_notify(?, ?)", (CHANNEL, topic))

    def keep_wal(self) -> None:
        """SQLite, a writer: checkpoint the WAL from a thread of its own from now on
        (bot/store/growth.py `WalKeeper`) until `close`. A running bot's store does."""
        if self.wal is None and not (self.postgres or self.readonly):
            self.wal = growth.WalKeeper(Path(self.where))

    def twin(self) -> Store:
        """Another connection to the same database, for a thread of its own (the pruner)."""
        return Store(self.where)

    def close(self) -> None:
        if self.wal is not None:
            self.wal.close()
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[None]:
        """Group writes: all land or none do. Nests."""
        if self._depth == 0:
            t0 = time.perf_counter()
            self.db.execute("BEGIN IMMEDIATE")
            wait = time.perf_counter() - t0
            self._waited = (max(self._waited[0], wait), self._waited[1] + wait)
        self._depth += 1
        try:
            yield
        except BaseException as exc:
            self._depth -= 1
            if self._depth == 0:
                self.db.execute("ROLLBACK")
            if self.space is not None and out_of_space(exc):
                self.space.hit(exc)
            raise
        self._depth -= 1
        if self._depth == 0:
            self._commit()

    def waited(self) -> tuple[float, float]:
        """The longest wait for the write lock since the last call and all of them summed,
        in seconds, and from zero again. SQLite: `BEGIN IMMEDIATE` waits in its busy
        handler while another connection (the pruner's, the WAL keeper's TRUNCATE)
        writes, and the event loop waits with it; PostgreSQL's `BEGIN` takes no lock, so
        there both read about zero (a row lock is waited for later)."""
        waited, self._waited = self._waited, (0.0, 0.0)
        return waited

    def _commit(self) -> None:
        """COMMIT; one that fails for want of space is rolled back (SQLite would keep the
        transaction open) and the disk watch told."""
        try:
            self.db.execute("COMMIT")
        except StoreError as exc:
            if out_of_space(exc):
                with suppress(StoreError):
                    self.db.execute("ROLLBACK")
                if self.space is not None:
                    self.space.hit(exc)
            raise

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Inside `tx()`: a part that fails is undone alone, the rest of the group stays."""
        self._savepoints += 1
        name = f"part{self._savepoints}"
        self.db.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.db.execute(f"ROLLBACK TO {name}")
            self.db.execute(f"RELEASE {name}")
            raise
        finally:
            self._savepoints -= 1
        self.db.execute(f"RELEASE {name}")

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        """For the store's own modules (`bot/store/triggers.py`); nobody else runs SQL.
        The cursor is sqlite3's or its twin (`bot.store.postgres.Cursor`): rows,
        `fetchone`, `fetchall`, `rowcount`, `lastrowid`."""
        return self.db.execute(sql, args)

    _x = execute

    # -- corrupt rows ----------------------------------------------------------------
    _QUARANTINE = {
        "inbound": "UPDATE inbound SET status = 'corrupt' WHERE id = ?",
        "mail": "DELETE FROM mail WHERE id = ?",
        "outbox": "UPDATE outbox SET status = 'corrupt' WHERE seq = ?",
        "questions": "UPDATE questions SET status = 'corrupt' WHERE id = ?",
        "workers": "UPDATE workers SET status = 'corrupt' WHERE id = ?",
        "triggers": "UPDATE triggers SET status = 'corrupt' WHERE id = ?",
        "attempts": "UPDATE attempts SET state = 'corrupt' WHERE rowid = ?",
        "kv": "DELETE FROM kv WHERE key = ?",
        "approvals": "UPDATE approvals SET status = 'corrupt', settled = 1 WHERE id = ?",
        "audit": "SELECT ?",  # append-only: a line that does not decode is only reported
    }

    def decode(self, source: str, rows: Iterable[Any], decode: Callable[[Any], T]) -> list[T]:
        """Decode rows; a row that does not decode is quarantined and reported, not fatal."""
        out = []
        for row in rows:
            try:
                out.append(decode(row))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                self._quarantine(source, row, exc)
        return out

    def quarantine(self, source: str, row: Any, exc: Exception) -> None:
        """Set aside a row that does not decode (`row[0]` is its key) and report it."""
        self._quarantine(source, row, exc)

    def _quarantine(self, source: str, row: Any, exc: Exception) -> None:
        key, payload = row[0], repr(tuple(row))[:10000]
        log.error("corrupt %s row %s quarantined: %s", source, key, exc)
        self._report(f"{source} row {key}: {type(exc).__name__}: {exc}")
        if self.readonly:  # a reader (status, activity) skips it; the bot quarantines it
            return
        with self.tx():
            self._x(
                "INSERT INTO quarantine (source, row_key, payload, error, at) VALUES (?,?,?,?,?)",
                (source, str(key), payload, f"{type(exc).__name__}: {exc}", time.time()),
            )
            self._x(self._QUARANTINE[source], (key,))

    # -- inbound journal -------------------------------------------------------------
    def journal(self, msg: Inbound, status: InboundStatus = "pending") -> int | None:
        """Record a message from a person; None when it was journaled before. Raises
        StoreFull while the disk is full (the channel does not ack: it comes again)."""
        if self.space is not None:
            self.space.refuse_new()
        cur = self._x(
            "INSERT INTO inbound"
            " (channel, message_id, conversation, payload, status, received_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                msg.channel,
                msg.message_id,
                msg.conversation,
                json.dumps(msg.to_json()),
                status,
                msg.received_at,
            ),
        )
        return cur.lastrowid if cur.rowcount else None

    def mark_inbound(self, inbound_id: int, status: InboundStatus) -> None:
        self._x("UPDATE inbound SET status = ? WHERE id = ?", (status, inbound_id))

    def recent_inbound(self, channel: str, since: float, until: float, limit: int) -> list[Inbound]:
        """The newest `limit` messages of one channel kind journaled in [since, until)
        (epoch seconds), newest first; read from the journal's end, never all of it."""
        # `channel || ''`: SQLite (no statistics) would otherwise walk the (channel,
        # message_id) index over every row of the kind (2.6 s at a million rows); walked
        # backwards, `inbound_received` stops after `limit` rows, whatever the journal's
        # size (tests/bench/bench_pickup_journal.py --explain)
        rows = self._x(
            "SELECT id, payload FROM inbound WHERE channel || '' = ? AND received_at >= ?"
            " AND received_at < ? ORDER BY received_at DESC, id DESC LIMIT ?",
            (channel, since, until, limit),
        )
        return [msg for _, msg in self.decode("inbound", rows, decode_inbound)]

    def pending_inbound(self) -> list[tuple[int, Inbound]]:
        return self.inbound_by_status("pending")

    def inbound_by_status(self, status: InboundStatus) -> list[tuple[int, Inbound]]:
        # `inbound_open` holds only the rows not routed (an index written by every
        # message costs each commit a page): the query names its condition to use it
        rows = self._x(
            "SELECT id, payload FROM inbound WHERE status = ? AND status <> 'routed' ORDER BY id",
            (status,),
        )
        return self.decode("inbound", rows, decode_inbound)

    def inbound_between(self, since: float, until: float) -> list[Inbound]:
        """Every message journaled in [since, until) (epoch seconds), any channel."""
        rows = self._x(
            "SELECT id, payload FROM inbound WHERE received_at >= ? AND received_at < ?",
            (since, until),
        )
        return [msg for _, msg in self.decode("inbound", rows, decode_inbound)]

    def update_inbound(self, inbound_id: int, msg: Inbound) -> None:
        """Rewrite a journaled message (its attachments, once saved)."""
        self._x(
            "UPDATE inbound SET payload = ? WHERE id = ?", (json.dumps(msg.to_json()), inbound_id)
        )

    # -- durable bus mail ------------------------------------------------------------
    def put_mail(self, msg: BusMessage) -> int:
        cur = self._x(
            "INSERT INTO mail (recipient, payload, created_at) VALUES (?, ?, ?)",
            (msg.recipient, json.dumps(msg.to_json()), time.time()),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def consume_mail(self, mail_ids: list[int]) -> None:
        if mail_ids:  # most checkpoints of a turn consumed none: no statement for them
            self.db.executemany("DELETE FROM mail WHERE id = ?", [(i,) for i in mail_ids])

    def all_mail(self) -> list[tuple[int, BusMessage]]:
        rows = self._x("SELECT id, payload FROM mail ORDER BY id")
        return self.decode("mail", rows, decode_mail)

    # -- channel state and health ----------------------------------------------------
    def get_kv(self, key: str) -> str | None:
        row = self._x("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_kv(self, key: str, value: str) -> None:
        self._x(
            "INSERT INTO kv (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def kv_prefixed(self, prefix: str) -> dict[str, str]:
        """Every key/value row whose key starts with `prefix`, the prefix cut off. A range
        of the key (the primary key's index), both backends comparing it by bytes."""
        if not prefix:
            rows = self._x("SELECT key, value FROM kv")
        else:
            rows = self._x(
                "SELECT key, value FROM kv WHERE key >= ? AND key < ?", (prefix, _after(prefix))
            )
        return {row[0][len(prefix) :]: row[1] for row in rows}

    def delete_kv(self, key: str) -> None:
        self._x("DELETE FROM kv WHERE key = ?", (key,))

    def set_health(self, channel: str, state: str, detail: str = "") -> None:
        self._x(
            "INSERT INTO health (channel, state, detail, updated_at) VALUES (?,?,?,?)"
            " ON CONFLICT (channel) DO UPDATE SET state = excluded.state,"
            " detail = excluded.detail, updated_at = excluded.updated_at",
            (channel, state, detail, time.time()),
        )
        CHANGES.state(channel, state, detail)  # the console hears it once per change

    def health(self) -> list[tuple[str, str, str, float]]:
        return list(
            self._x("SELECT channel, state, detail, updated_at FROM health ORDER BY channel")
        )


def _after(prefix: str) -> str:
    """The first string past every one that starts with `prefix`, by code points (UTF-8's
    byte order): its last character moved one on (`prefix + "\\uffff"` misses the
    characters past U+FFFF)."""
    nxt = ord(prefix[-1]) + 1
    return prefix[:-1] + chr(0xE000 if 0xD800 <= nxt < 0xE000 else nxt)  # no lone surrogate
