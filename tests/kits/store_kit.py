"""A database left at an older schema version, on either backend (the `database`
fixture), as a data dir of that version would be found at start."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import psycopg

from bot.store import migrations, migrations_pg
from config.settings import Database


def at_version(
    database: Database, version: int, rows: Iterable[tuple[str, tuple[Any, ...]]]
) -> None:
    """Migrate `database` to `version` only, then run each (statement with `?`
    placeholders, values) of `rows` in it."""
    if isinstance(database, str):
        with psycopg.connect(database, autocommit=True) as pg:
            pg.execute(migrations_pg.SCHEMA_VERSION_TABLE)
            for script in migrations_pg.MIGRATIONS[:version]:
                pg.execute(script)
            pg.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
            for sql, values in rows:
                pg.execute(sql.replace("?", "%s"), values)
        return
    db = sqlite3.connect(database, isolation_level=None)
    try:
        for step in migrations.MIGRATIONS[:version]:
            step(db)
        db.execute(f"PRAGMA user_version = {version}")
        for sql, values in rows:
            db.execute(sql, values)
    finally:
        db.close()
