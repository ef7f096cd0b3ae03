"""SQLite's edge: the connection the store speaks to, with sqlite3's exceptions raised
as the store's own (bot/store/errors.py). The same face as PostgreSQL's connection
(bot/store/postgres.py): `execute`, `executemany`, `executescript`, `close`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from bot.store.errors import from_sqlite


class Connection:
    """A SQLite connection whose errors are the store's."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self.raw.execute(sql, args)
        except sqlite3.Error as exc:
            raise from_sqlite(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        with _errors():
            return self.raw.executemany(sql, rows)

    def executescript(self, script: str) -> None:
        with _errors():
            self.raw.executescript(script)

    def close(self) -> None:
        self.raw.close()


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise from_sqlite(exc) from exc
