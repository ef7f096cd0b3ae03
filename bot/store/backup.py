"""`switchboard backup DIR`, `switchboard restore DIR`, and the lock a running bot holds.

A running bot (`run`, `chat`) holds a shared lock (flock) on `<data dir>/switchboard.lock`
(shared: the nodes of one bot may share a data dir); `restore` takes it exclusively, so
it refuses while any bot runs there, and a bot does not start during a restore.
A backup is the data dir's tree: every SQLite file copied by SQLite's online backup (a
consistent copy while the bot writes; the WAL's pages included), append-only logs
(`*.jsonl`, `*.log`) up to their last complete line, every other file as it is; derived
search indexes and the copies kept before migrations are left out. With the state in
PostgreSQL, backup and restore carry the files only, and say the `pg_dump` / `pg_restore`
line that carries the database (`pg_line`: the URL without its password).
"""

from __future__ import annotations

import fcntl
import shlex
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


def backup(data_dir: Path, dest: Path, *, sqlite: bool = True) -> int:
    """Copy the data dir's state into `dest` (created; must not exist); files copied.
    `sqlite`: the state's database is the data dir's file (False: PostgreSQL's, not here)."""
    if sqlite and not (data_dir / DB).exists():
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


def restore(source: Path, data_dir: Path, *, sqlite: bool = True) -> int:
    """Put a backup back into `data_dir` (created if missing); files restored. The data
    dir's database, if any, is kept as `switchboard.db.before-restore.bak`. `sqlite`:
    as for `backup` (False: the files only)."""
    if sqlite:
        _check_backup(source)
    elif not source.is_dir():
        raise BackupError(f"{source} is not a Switchboard backup (no such directory)")
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


def _check_backup(source: Path) -> None:
    if not (source / DB).is_file():
        raise BackupError(f"{source} is not a Switchboard backup (no {DB} in it)")
    migrations.connect(source / DB, readonly=True).close()  # refuses a newer version's


def pg_line(command: str, where: Path, url: str) -> str:
    """What carries a PostgreSQL database into `where` (or back): a line to run."""
    dump = shlex.quote(str(where / PG_DUMP))
    if command == "backup":
        return (
            "The state is in PostgreSQL, not in these files: dump it with "
            f"`pg_dump --format=custom --file={dump} {shlex.quote(without_password(url))}`"
        )
    return (
        "The state is in PostgreSQL: with every node stopped, load it with "
        f"`pg_restore --clean --if-exists --dbname={shlex.quote(without_password(url))} {dump}`"
    )


def without_password(url: str) -> str:
    """`url` with no password (pg_dump asks for it, or reads PGPASSWORD / ~/.pgpass)."""
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0].split(":", 1)[0]
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user}@{host}" if user else host
    query = "&".join(q for q in parts.query.split("&") if not q.lower().startswith("password="))
    return urlunsplit(parts._replace(netloc=netloc, query=query))


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
