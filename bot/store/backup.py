"""`switchboard backup DIR`, `switchboard restore DIR`, and the lock a running bot holds.

A running bot (`run`, `chat`) holds a shared lock (flock) on `<data dir>/switchboard.lock`
(shared: the nodes of one bot may share a data dir); `restore` takes it exclusively, so
it refuses while any bot runs there, and a bot does not start during a restore.
A backup is the data dir's tree: every SQLite file copied by SQLite's online backup (a
consistent copy while the bot writes; the WAL's pages included), append-only logs
(`*.jsonl`, `*.log`) up to their last complete line, every other file as it is; derived
search indexes and the copies kept before migrations are left out. A backup holds every
transcript, so it is its owner's alone: directories 0700, files 0600, whatever the umask;
a symbolic link is never followed (left out of a backup; a backup holding one is refused
by `restore`, which would otherwise copy whatever the link points at into the data
dir). With the state in
PostgreSQL, backup and restore carry the files only, and say the `pg_dump` / `pg_restore`
line that carries the database (`pg_line`: the URL without its password).
"""

from __future__ import annotations

import fcntl
import os
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
DIR_MODE = 0o700
FILE_MODE = 0o600


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
    if dest.exists() or dest.is_symlink():
        raise BackupError(f"{dest} exists: a backup goes to a new directory")
    _private_dir(dest)  # and the parents it creates
    return sum(_copy(src, dest / src.relative_to(data_dir)) for src in _state_files(data_dir))


def _state_files(root: Path) -> Iterator[Path]:
    """Regular files below `root`, symbolic links (to files or folders) left out."""
    for folder, dirs, names in os.walk(root):  # never follows a link to a folder
        dirs.sort()
        here = Path(folder)
        for name in sorted(names):
            path = here / name
            if not path.is_symlink() and path.is_file() and not name.endswith(_LEFT_OUT):
                yield path


def _links(root: Path) -> list[Path]:
    return [
        Path(folder) / name
        for folder, dirs, names in os.walk(root)
        for name in [*dirs, *names]
        if (Path(folder) / name).is_symlink()
    ]


def _private_dir(path: Path) -> None:
    """`path` and its missing parents up to an existing one, made 0700 (umask aside)."""
    if path.is_dir():
        return
    _private_dir(path.parent)
    path.mkdir(mode=DIR_MODE, exist_ok=True)
    path.chmod(DIR_MODE)


def _copy(src: Path, dest: Path) -> bool:
    """One file; False when it vanished meanwhile (a temporary file renamed)."""
    _private_dir(dest.parent)
    try:
        if _is_sqlite(src):
            _sqlite_copy(src, dest)
        elif src.suffix in _LINE_FILES:
            data = src.read_bytes()
            _write_private(dest, data[: data.rfind(b"\n") + 1])
        else:
            _copy_private(src, dest)
    except FileNotFoundError:
        return False
    dest.chmod(FILE_MODE)
    return True


def _create_private(dest: Path) -> int:
    """A new file created 0600 (never readable by others, not for a moment)."""
    return os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)


def _write_private(dest: Path, data: bytes) -> None:
    with os.fdopen(_create_private(dest), "wb") as handle:
        handle.write(data)


def _copy_private(src: Path, dest: Path) -> None:
    """`src` (never through a link) into a new 0600 file, its times kept."""
    with (
        os.fdopen(os.open(src, os.O_RDONLY | os.O_NOFOLLOW), "rb") as source,
        os.fdopen(_create_private(dest), "wb") as target,
    ):
        shutil.copyfileobj(source, target)
    shutil.copystat(src, dest, follow_symlinks=False)


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
    if source.is_symlink() or (source.is_dir() and _links(source)):
        link = source if source.is_symlink() else _links(source)[0]
        raise BackupError(
            f"{link} is a symbolic link: a backup holds none, so this one was changed "
            "after it was made; nothing was restored"
        )
    if sqlite:
        _check_backup(source)
    elif not source.is_dir():
        raise BackupError(f"{source} is not a Switchboard backup (no such directory)")
    _private_dir(data_dir)
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
    _private_dir(dest.parent)
    part = dest.with_name(dest.name + ".part")
    part.unlink(missing_ok=True)
    _copy_private(src, part)
    part.chmod(FILE_MODE)
    part.replace(dest)
