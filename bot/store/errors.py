"""The store's errors: one family, whatever the database.

Each backend maps its driver's exceptions once, at its edge (`raise ... from exc`):
SQLite's in `bot/store/sqlite.py`, psycopg's in `bot/store/postgres.py`. Nothing above
the store catches a driver's exception; the CLI catches these as it catches settings
errors. (`migrations.SchemaTooNew`, state written by a newer version, is a settings
error: the person must run the newer version.)
"""

from __future__ import annotations

import sqlite3


class StoreError(Exception):
    """The store could not do what was asked."""


class StoreUnavailable(StoreError):
    """The database cannot be reached, is busy, or its session ended: try again later."""


class MissingTable(StoreError):
    """A table or column this data dir does not have (one no version with that feature
    has opened yet, read without migrating)."""


class Conflict(StoreError):
    """The table refuses the write: a row with that key is there already, or a rule of
    the table says no (the audit log is append-only)."""


class Fenced(StoreUnavailable):
    """This node no longer leads: the store refuses its writes (the lease's generation)."""


def from_sqlite(exc: sqlite3.Error) -> StoreError:
    """SQLite's exception as the store's."""
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        return Conflict(text)
    if isinstance(exc, sqlite3.OperationalError):
        if text.startswith(("no such table", "no such column")):
            return MissingTable(text)
        return StoreUnavailable(text)  # locked, busy, unable to open, disk I/O
    return StoreError(text)
