"""PostgreSQL behind the surface the store already speaks: sqlite3's DB-API.

`connect(url)` gives a `Connection` with sqlite3's `execute`, `executemany` and
`executescript`, cursors with `fetchone`, `fetchall`, `rowcount` and `lastrowid`, and
the store's own exceptions (bot/store/errors.py: a unique key is `Conflict`, a missing
table `MissingTable`, a lost server `StoreUnavailable`), as SQLite's edge raises them, so
the store's modules stay one set of SQL.
The SQL is written to run on both (`ON CONFLICT DO NOTHING`, not SQLite's `INSERT OR
IGNORE`); what cannot be is translated once per statement (cached): `?` placeholders,
`BEGIN IMMEDIATE`, `CAST(x AS INTEGER)` (SQLite truncates, PostgreSQL rounds), `instr`
(`strpos`), `COLLATE BINARY` (byte order: `COLLATE "C"`), and a `RETURNING` clause
where the store reads `lastrowid`. The connection is in autocommit
mode: the store's own `BEGIN`/`COMMIT` make its transactions, as on SQLite.

A session that is lost (the server restarted, an administrator or a timeout ended it)
is opened again at the next statement, its `configure`d settings with it; not inside a
transaction (the rest of it would land alone: its statements fail until its COMMIT or
ROLLBACK), not once `hold()` says the session holds something (the leader's advisory
lock: that session lost, the lock is gone, and the connection is fenced), and never
once fenced (`fence()`): a node that led through it has lost its lease, and nothing may
be written through it any more (bot/store/lease.py).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.adapt import Loader

from bot.store.errors import Conflict, Fenced, MissingTable, StoreError, StoreUnavailable

log = logging.getLogger(__name__)

#: a server that vanishes (a cut network, not a refused port) is noticed in seconds, not
#: after the kernel's TCP timeout of minutes, while the event loop waits on it
LIBPQ: dict[str, Any] = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
    "tcp_user_timeout": 10_000,
}
#: the column `lastrowid` reads, per table a statement inserts into
RETURNING = {"inbound": "id", "mail": "id", "quarantine": "id", "llm_usage": "id", "audit": "seq"}
_INSERT = re.compile(r"INSERT INTO (\w+)")
_CAST = re.compile(r"CAST\(([^()]*) AS INTEGER\)")
_BEGIN = re.compile(r"BEGIN\b", re.IGNORECASE)
_END = re.compile(r"(COMMIT|ROLLBACK)\s*$", re.IGNORECASE)


@lru_cache(maxsize=1024)
def translate(sql: str) -> tuple[str, bool]:
    """(PostgreSQL's statement, whether it returns the new row's id)."""
    q = sql.strip()
    if q == "BEGIN IMMEDIATE":
        return "BEGIN", False
    q = _CAST.sub(r"FLOOR(\1)::BIGINT", q).replace("%", "%%").replace("?", "%s")
    q = q.replace("instr(", "strpos(").replace("COLLATE BINARY", 'COLLATE "C"')
    table = _INSERT.match(q)
    if table is not None and table.group(1) in RETURNING:
        return f"{q} RETURNING {RETURNING[table.group(1)]}", True
    return q, False


class _Numeric(Loader):
    """SUM over integers is NUMERIC in PostgreSQL: an int where it is whole (as SQLite)."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return float(text) if "." in text or "e" in text.lower() else int(text)


class Cursor:
    """sqlite3's cursor surface over a finished psycopg statement (results in memory)."""

    def __init__(self, cur: psycopg.Cursor[Any] | None, returning: bool = False) -> None:
        self._rows: list[Any] = cur.fetchall() if cur is not None and cur.description else []
        self.rowcount = cur.rowcount if cur is not None else -1
        self.lastrowid: int | None = None
        if returning:
            self.lastrowid = self._rows[0][0] if self._rows else None
            self._rows = []

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """One PostgreSQL session, spoken to as the store speaks to SQLite."""

    def __init__(self, url: str, *, setup: Sequence[str] = ()) -> None:
        self.url = url
        self._setup = list(setup)
        self._lock = threading.RLock()
        self._fenced: str | None = None
        #: what this session holds that a new one would not (None: nothing)
        self._holds: str | None = None
        #: a transaction is open (BEGIN ran, its COMMIT or ROLLBACK not yet)
        self._tx = False
        self.raw = self._open()
        #: one cursor for every statement: its rows are copied out at once (`Cursor`), and
        #: a cursor made per statement costs ~3 us each (bench_postgres: 4 a routed message)
        self._cur = self.raw.cursor()

    def _open(self) -> psycopg.Connection[Any]:
        with _errors():
            conn = psycopg.connect(self.url, autocommit=True, **LIBPQ)
        conn.adapters.register_loader("numeric", _Numeric)
        for statement in self._setup:
            conn.execute(statement)
        return conn

    def configure(self, statement: str) -> None:
        """Run a setting on this session now and on every session opened again."""
        self.execute(statement)
        self._setup.append(statement)

    def hold(self, what: str | None) -> None:
        """This session holds `what` (None: nothing any more): lost, it is fenced."""
        self._holds = what

    def fence(self, why: str) -> None:
        """Refuse every statement from now on (the lease behind this session is lost)."""
        self._fenced = why

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        q, returning = translate(sql)
        if _END.match(q):
            self._tx = False  # over, whether it lands or the session is gone
        with self._session() as cur:
            cursor = Cursor(cur.execute(q, args or None), returning)
        if _BEGIN.match(q):
            self._tx = True
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        q, _ = translate(sql)
        with self._session() as cur:
            cur.executemany(q, list(rows))
            return Cursor(cur)

    def executescript(self, script: str) -> None:
        with self._session() as cur:
            cur.execute(script.encode())  # several statements, no parameters

    def close(self) -> None:
        self.raw.close()

    @contextmanager
    def _session(self) -> Iterator[psycopg.Cursor[Any]]:
        with self._lock:
            if self.raw.closed:
                self._reopen()
            if self._fenced is not None:
                raise Fenced(f"fenced: {self._fenced}")
            with _errors():
                yield self._cur

    def _reopen(self) -> None:
        """A new session for the lost one, where nothing of the old one is missed."""
        if self._holds is not None:
            self.fence(f"the session that held {self._holds} ended")
        if self._fenced is not None:
            return
        if self._tx:
            raise StoreUnavailable("the database session ended inside a transaction")
        self.raw = self._open()
        self._cur = self.raw.cursor()


@contextmanager
def _errors() -> Iterator[None]:
    """psycopg's exceptions as the store's (bot/store/errors.py)."""
    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise Conflict(str(exc)) from exc
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
        raise MissingTable(str(exc).strip()) from exc
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(str(exc).strip()) from exc
    except psycopg.Error as exc:
        raise StoreError(str(exc).strip()) from exc


def connect(url: str, *, setup: Sequence[str] = ()) -> Connection:
    """A session on `url`; `setup` statements run on it (and again on each reconnect)."""
    return Connection(url, setup=setup)
