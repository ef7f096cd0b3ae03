"""The store's schema versions: the one place that knows them and moves a database on.

SQLite keeps the version in `PRAGMA user_version`; 0 is a data dir written before
versions were numbered (the main of a5b872b and later), which every migration brings
forward idempotently. PostgreSQL keeps it in a `schema_version` table and runs the
twin of each version (bot/store/migrations_pg.py), one node at a time. At start,
`migrate()` refuses a database written by a newer version (one line naming both
versions and the file), keeps a copy of the file beside
it (`switchboard.db.v<old>.bak`, SQLite's online backup), then runs the missing
migrations and sets the new version in one transaction: all land or none do.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.store import migrations_pg
from bot.store import migrations_sql as sql
from bot.store.errors import StoreUnavailable
from config.settings import SettingsError

if TYPE_CHECKING:
    from bot.store.postgres import Connection

log = logging.getLogger(__name__)
#: the LISTEN/NOTIFY channel the nodes of one PostgreSQL database wake each other on
CHANNEL = "switchboard"
#: one migrating node at a time (a transaction-scoped advisory lock's key)
MIGRATION_LOCK = 0x5357_4D49
Migration = Callable[[sqlite3.Connection], None]


class SchemaTooNew(SettingsError):
    """The database was written by a newer Switchboard: nothing may touch it."""


class MigrationFailed(SettingsError):
    """A migration failed: rolled back, the file is as it was; one line, exit status 2."""


def _script(text: str) -> Migration:
    def run(db: sqlite3.Connection) -> None:
        for statement in statements(text):
            db.execute(statement)

    return run


def _add_columns(table: str, columns: tuple[tuple[str, str], ...]) -> Migration:
    def run(db: sqlite3.Connection) -> None:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns:
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    return run


#: version n is reached by running MIGRATIONS[n - 1]; append, never edit
MIGRATIONS: tuple[Migration, ...] = (
    _script(sql.V1_TABLES),
    _add_columns("approvals", sql.V2_APPROVAL_COLUMNS),
    _script(sql.V3_AUDIT),
    _script(sql.V4_INBOUND_RECEIVED),
    _script(sql.V5_LEANER_INDEXES),
    _script(sql.V6_RETENTION),
    _script(sql.V7_OUTBOX_SENT),
    _script(sql.V8_CONVERSATION_MESSAGES),
    _script(sql.V9_OUTBOX_PARTIAL),
)
VERSION = len(MIGRATIONS)


def statements(text: str) -> Iterator[str]:
    """The statements of an SQL script, one by one (a trigger's body stays whole):
    `executescript` would commit the transaction the migrations run in."""
    buf = ""
    for line in text.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""


NO_DRIVER = (
    "SWITCHBOARD_DATABASE_URL needs the PostgreSQL driver (psycopg), which is not installed: "
    "pip install 'switchboard[postgres]' in the bot's venv"
)


class DatabaseUnreachable(SettingsError):
    """SWITCHBOARD_DATABASE_URL names a server that cannot be reached (or refuses us)."""


def open_postgres(url: str, readonly: bool) -> Connection:
    """A session on the PostgreSQL database at `url`, its schema brought to VERSION (a
    reader only checks it). One line naming the variable when it cannot be reached."""
    try:
        from bot.store import postgres  # psycopg loads only for a PostgreSQL store
    except ModuleNotFoundError as exc:  # the venv was made without the extra
        raise SettingsError(NO_DRIVER) from exc
    try:
        db = postgres.connect(url)
    except StoreUnavailable as exc:
        raise DatabaseUnreachable(
            f"SWITCHBOARD_DATABASE_URL: cannot reach the database ({_first_line(exc)})"
        ) from exc
    if readonly:
        check_postgres(db, _pg_version(db, create=False))
    else:
        migrate_postgres(db)
    return db


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _pg_version(db: Connection, create: bool = True) -> int:
    """The database's version (0: none yet); a reader creates nothing."""
    if create:
        db.executescript(migrations_pg.SCHEMA_VERSION_TABLE)
    elif db.execute("SELECT to_regclass('schema_version')").fetchone()[0] is None:
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def check_postgres(db: Connection, found: int) -> None:
    if found > VERSION:
        raise SchemaTooNew(
            f"SWITCHBOARD_DATABASE_URL: the database has schema version {found}, written by a "
            f"newer Switchboard; this one reads up to version {VERSION}: run the newer "
            "release on every node"
        )


def migrate_postgres(db: Connection) -> None:
    """Bring a PostgreSQL database to VERSION in one transaction, one node at a time."""
    with _all_or_nothing(db, "BEGIN", lambda exc: (
        f"SWITCHBOARD_DATABASE_URL: the migration to schema version {VERSION} failed "
        f"({_first_line(exc)}); nothing was changed"
    )):  # fmt: skip
        db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
        old = _pg_version(db)
        check_postgres(db, old)
        for script in migrations_pg.MIGRATIONS[old:]:
            db.executescript(script)
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (VERSION,))
    if old != VERSION:
        log.info("schema migrated from version %d to %d (PostgreSQL)", old, VERSION)


@contextmanager
def _all_or_nothing(db: Any, begin: str, failed: Callable[[Exception], str]) -> Iterator[None]:
    """The migrations and the new version land together, or nothing does: a database
    error is MigrationFailed, its one line made by `failed`."""
    db.execute(begin)
    try:
        yield
    except BaseException as exc:
        db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise MigrationFailed(failed(exc)) from exc
        raise
    db.execute("COMMIT")


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """An autocommit connection to the store's file, refused (SchemaTooNew) when a newer
    version wrote it: checked before anything else touches the file."""
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA busy_timeout=5000")
    try:
        check(db, path)
    except SchemaTooNew:
        db.close()
        raise
    return db


def check(db: sqlite3.Connection, path: Path) -> int:
    """The database's version; raises SchemaTooNew when a newer Switchboard wrote it."""
    found = version(db)
    if found > VERSION:
        raise SchemaTooNew(
            f"{path} has schema version {found}, written by a newer Switchboard; this one "
            f"reads up to version {VERSION}: run the newer release, or give it another "
            "data dir (SWITCHBOARD_DATA_DIR / --data-dir)"
        )
    return found


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the database to VERSION (autocommit connection; the file is not in use by
    an older writer). A copy of a database that had tables is kept first."""
    old = check(db, path)
    if old == VERSION:
        return
    if _has_tables(db):
        keep_copy(db, path.with_name(f"{path.name}.v{old}.bak"))
    with _all_or_nothing(db, "BEGIN IMMEDIATE", lambda exc: (
        f"{path}: the migration from schema version {old} to {VERSION} failed "
        f"({exc}); nothing was changed"
    )):  # fmt: skip
        for step in MIGRATIONS[check(db, path) :]:  # again: another process may have won
            step(db)
        db.execute(f"PRAGMA user_version = {VERSION}")
    log.info("schema migrated from version %d to %d (%s)", old, VERSION, path)


def _has_tables(db: sqlite3.Connection) -> bool:
    return (
        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone()
        is not None
    )


def keep_copy(db: sqlite3.Connection, dest: Path) -> None:
    """A consistent copy of the open database at `dest` (SQLite's online backup: pages
    still in the WAL included, writers not stopped); written aside, then renamed."""
    part = dest.with_name(dest.name + ".part")
    part.unlink(missing_ok=True)
    target = sqlite3.connect(part)
    try:
        db.backup(target)
    finally:
        target.close()
    part.replace(dest)
