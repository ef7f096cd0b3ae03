"""`switchboard backup DIR`, `switchboard restore DIR`, and the lock a running bot holds.

A running bot (`run`, `chat`) holds a shared lock (flock) on `<data dir>/switchboard.lock`
(shared: the nodes of one bot may share a data dir); `restore` takes it exclusively, so
it refuses while any bot runs there, and a bot does not start during a restore.
A backup is the data dir's tree: every SQLite file copied by SQLite's online backup (a
consistent copy while the bot writes; the WAL's pages included), append-only logs
(`*.jsonl`, `*.log`) up to their last complete line, every other file as it is; derived
search indexes and the copies kept before migrations are left out. On PostgreSQL the
tables are saved by pg_dump (the command is printed, the password left out) and the
backup holds the data dir's files.
"""

from __future__ import annotations

import fcntl
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

from bot.store import migrations
from config.settings import SettingsError

DB = "switchboard.db"
#: where the PostgreSQL dump goes in a backup dir (written by pg_dump, not by us)
PG_DUMP = "switchboard.pgdump"
LOCK = "switchboard.lock"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_LINE_FILES = (".jsonl", ".log")
#: SQLite's side files, the lock, derived indexes (rebuilt), safety copies
_LEFT_OUT = ("-wal", "-shm", "-journal", ".part", ".bak", LOCK, ".search.sqlite", PG_DUMP)


class BackupError(SettingsError):
    """A backup or restore that cannot be done: one line, exit status 2."""


@contextmanager
def running(data_dir: Path) -> Iterator[None]:
    """Held while a bot runs on `data_dir`; refused while a restore is under way."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / LOCK).open("a+") as handle:
        if not _lock(handle, fcntl.LOCK_SH):
            raise BackupError(f"a restore into {data_dir} is under way: start when it is done")
        yield


def _lock(handle: IO[str], kind: int) -> bool:
    try:
        fcntl.flock(handle, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def backup(data_dir: Path, dest: Path, postgres: bool = False) -> int:
    """Copy the data dir's state into `dest` (created; must not exist); files copied.
    `postgres`: the tables are in PostgreSQL (`pg_dump_line` says how to save them)."""
    if not postgres and not (data_dir / DB).exists():
        raise BackupError(f"no Switchboard data in {data_dir} (no {DB}): nothing to back up")
    if dest.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{dest} is inside the data dir {data_dir}: give a directory outside")
    try:
        dest.mkdir(parents=True)
    except FileExistsError:
        raise BackupError(f"{dest} exists: a backup goes to a new directory") from None
    return sum(_copy(src, dest / src.relative_to(data_dir)) for src in _state_files(data_dir))


def _state_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(_LEFT_OUT):
            yield path


def _copy(src: Path, dest: Path) -> bool:
    """One file; False when it vanished meanwhile (a temporary file renamed)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        if _is_sqlite(src):
            _sqlite_copy(src, dest)
        elif src.suffix in _LINE_FILES:
            data = src.read_bytes()
            dest.write_bytes(data[: data.rfind(b"\n") + 1])
        else:
            shutil.copy2(src, dest)
    except FileNotFoundError:
        return False
    return True


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC


def _sqlite_copy(src: Path, dest: Path) -> None:
    db = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        db.execute("PRAGMA busy_timeout=5000")
        migrations.keep_copy(db, dest)
    finally:
        db.close()


def pg_dump_line(url: str, dest: Path, restore: bool = False) -> str:
    """The command that saves (or puts back) the PostgreSQL tables, the password left
    out of it (pg_dump reads it from PGPASSWORD or ~/.pgpass)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    where = f"{host}:{parts.port}" if parts.port else host
    safe = urlunsplit((parts.scheme, f"{parts.username}@{where}" if parts.username else where,
                       parts.path, parts.query, ""))  # fmt: skip
    dump = dest / PG_DUMP
    if restore:
        return f"pg_restore --clean --if-exists --dbname '{safe}' '{dump}'"
    return f"pg_dump --format=custom --file '{dump}' '{safe}'"


def restore(source: Path, data_dir: Path, postgres: bool = False) -> int:
    """Put a backup back into `data_dir` (created if missing); files restored. The data
    dir's database, if any, is kept as `switchboard.db.before-restore.bak`.
    `postgres`: the tables come back with pg_restore (`pg_dump_line`), the files here."""
    if not postgres and not (source / DB).is_file():
        raise BackupError(f"{source} is not a Switchboard backup (no {DB} in it)")
    if not postgres:
        migrations.connect(source / DB, readonly=True).close()  # refuses a newer version's
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / LOCK).open("a+") as handle:
        if not _lock(handle, fcntl.LOCK_EX):
            raise BackupError(f"a bot is running on {data_dir}: stop it, then restore")
        _set_aside(data_dir / DB)
        _drop_derived(data_dir)
        files = list(_state_files(source))
        for src in files:
            _put(src, data_dir / src.relative_to(source))
    return len(files)


def _set_aside(db_path: Path) -> None:
    """Keep the database being replaced, then remove it and its side files: a WAL left
    beside the restored file would be replayed into it."""
    if db_path.exists():
        _sqlite_copy(db_path, db_path.with_name(f"{DB}.before-restore.bak"))
    for suffix in ("", "-wal", "-shm", "-journal"):
        db_path.with_name(db_path.name + suffix).unlink(missing_ok=True)


def _drop_derived(data_dir: Path) -> None:
    """The search indexes describe the files being replaced: rebuilt from the restored ones."""
    for index in data_dir.rglob(".search.sqlite*"):
        index.unlink(missing_ok=True)


def _put(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    shutil.copy2(src, part)
    part.replace(dest)
