"""The narrow SQL handle a table of the store is written against: run a statement, decode
its rows (a row that does not decode is quarantined), group writes in a transaction,
and announce a write to the leader (PostgreSQL's NOTIFY, delivered at the commit).

`Store` (bot/store/core.py) implements it on its one connection and hands itself to each
table as this handle, as APScheduler's SQL data store is handed its engine: a table
(`bot/store/agents.py`, `outbox.py`, `approvals.py`, ...) imports this, never the
`Store` that owns it, and can be built alone on any handle (tests/store/test_tables.py).
The SQL is one dialect for both backends (bot/store/postgres.py translates the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Cursor(Protocol):
    """A finished statement: sqlite3's cursor or its PostgreSQL twin
    (`bot.store.postgres.Cursor`)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Sql(Protocol):
    """What a table needs of the database it lives in."""

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Cursor:
        """Run one statement (`?` placeholders) on the store's connection."""
        ...

    def decode(self, source: str, rows: Iterable[Any], decode: Callable[[Any], T]) -> list[T]:
        """`decode` each row of table `source`; one that does not decode is set aside."""
        ...

    def tx(self) -> AbstractContextManager[None]:
        """Writes that land together or not at all (nests)."""
        ...

    def notify(self, topic: str) -> None:
        """Inside a transaction: wake the leader at the commit (PostgreSQL, a follower)."""
        ...
