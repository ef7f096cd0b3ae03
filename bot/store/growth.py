"""How big the data dir has grown, and what keeps it from growing for ever: the SQLite
WAL checkpointed and truncated, old rotated event logs and archived transcripts removed
(the pruner's files, bot/store/prune.py), and the figures `switchboard status`, the
dashboard and /metrics show (data dir, database and WAL size, the oldest row kept, the
last pruning).
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.core.events import log_files
from bot.store.prune import Pruned, Pruner, PruneRun, last_run
from bot.store.prune_agents import retire_workers
from bot.store.prune_files import remove_unused

if TYPE_CHECKING:
    from config.settings import Database, Settings

log = logging.getLogger(__name__)

#: the WAL is checkpointed by SQLite every this many pages (~40 MB: hot pages are copied
#: back once per checkpoint, bench_core), and cut back to JOURNAL_LIMIT after each one.
#: A backstop only: the keeper (`WalKeeper`) checkpoints long before, off the event loop
AUTOCHECKPOINT_PAGES = 10_000
JOURNAL_LIMIT = 64 * 1024 * 1024
#: how often the keeper copies the WAL back into the database (PASSIVE, its own thread)
KEEP_SECONDS = 1.0
#: PASSIVE passes the keeper makes each time to copy back every frame (see `_catch_up`)
CATCH_UP_TRIES = 6
#: past this size the keeper cuts the WAL (TRUNCATE): under a steady write load a PASSIVE
#: checkpoint never finishes between two commits, so the WAL would not restart by itself
CUT_BYTES = 32 * 1024 * 1024
#: how long a TRUNCATE may wait for a reader or a writer (it blocks the store's writers
#: while it waits): a busy one is tried again at the next pruning, or the next second
TRUNCATE_WAIT_MS = 20


class Measured(Pruned, Protocol):
    """The store as growth sees it: its SQL, and where its database is."""

    @property
    def postgres(self) -> bool: ...

    @property
    def where(self) -> Database: ...

    def keep_wal(self) -> None: ...

    def twin(self) -> Pruned: ...

    def waited(self) -> tuple[float, float]: ...


def tune_sqlite(db: object) -> None:
    """The pragmas that bound the WAL of a writing connection (bot/store/core.py)."""
    execute = db.execute  # type: ignore[attr-defined]
    execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    execute(f"PRAGMA journal_size_limit={JOURNAL_LIMIT}")


def pruner(store: Measured, settings: Settings) -> Pruner:
    """The pruner of a bot: its retention settings, its data dir's files, the WAL
    checkpointed after each run (and kept short meanwhile: `WalKeeper`)."""
    store.keep_wal()
    p = Pruner(
        store,
        settings.retention,
        settings.audit_retention,
        files=partial(old_files, settings.data_dir),
    )
    p.after = partial(after_pruning, store)
    p.folders = partial(retire_workers, settings.data_dir)
    p.connect = store.twin
    p.waits = store.waited
    return p


def after_pruning(store: Measured) -> bool:
    """After each pruning run, in its thread: the WAL checkpointed (`checkpoint`), then
    the memory freed since given back to the system (`give_back_memory`)."""
    done = checkpoint(store)
    give_back_memory()
    return done


def give_back_memory() -> int:
    """glibc keeps what the bot's threads (the model's, the pruner's, the store's
    executors) freed in their own malloc arenas, and hands it back to the system only
    from the top of each: a long run's resident memory climbs by what those holes hold
    (10 MB in 30 minutes of the soak; `malloc_trim` gave it back at once). This returns
    it (the call runs without the GIL, in the pruner's thread). Elsewhere (musl, macOS):
    nothing. Returns malloc_trim's answer (1: memory was returned), or -1."""
    trim = _malloc_trim()
    return trim(0) if trim is not None else -1


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return getattr(ctypes.CDLL("libc.so.6"), "malloc_trim", None)  # glibc only
    except OSError:
        return None


def checkpoint(store: Measured) -> bool:
    """SQLite: copy the WAL into the database and cut the WAL file to nothing, from a
    connection of its own (`cut`): call it off the event loop. False when a reader or a
    writer kept it from finishing (it is tried again at the next run). PostgreSQL:
    nothing (autovacuum's and the server's)."""
    return True if store.postgres else cut(Path(store.where))


def cut(path: Path) -> bool:
    """PASSIVE first (copies what it can, waiting for nobody), then TRUNCATE, which holds
    the store's writers only for what came in meanwhile and gives up after
    TRUNCATE_WAIT_MS: True when the WAL file is empty."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        return _cut(db)
    finally:
        db.close()


def _cut(db: sqlite3.Connection) -> bool:
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.execute(f"PRAGMA busy_timeout={TRUNCATE_WAIT_MS}")
    try:
        return not db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    except sqlite3.OperationalError:  # locked: a writer was in the middle of its commit
        return False
    finally:
        db.execute("PRAGMA busy_timeout=0")


def _written(wal: Path) -> tuple[int, int] | None:
    """The WAL file's size and last write (None: not there)."""
    try:
        st = wal.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def _catch_up(db: sqlite3.Connection, tries: int = CATCH_UP_TRIES) -> bool:
    """PASSIVE checkpoints until every frame is copied back (each pass copies what came
    in during the last one, fewer each time); then the next commit starts the WAL over
    from its beginning, and the file stops growing. True when it caught up."""
    last = -1
    for _ in range(tries):
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
        if not busy and copied >= frames == last:  # nothing came in during the pass
            return True
        last = frames
    return False


class WalKeeper:
    """Keeps the WAL of a SQLite store short, from a thread and a connection of its own:
    every KEEP_SECONDS a PASSIVE checkpoint (waits for no reader or writer; the copy
    and its fsync run outside the GIL), and a TRUNCATE (`cut`: it holds the writers for
    the pages written since and its fsync) once the WAL file has passed CUT_BYTES,
    which a PASSIVE alone does not prevent under steady writes. The event loop's
    connection then never copies pages back on a commit (its autocheckpoint is a
    backstop) nor waits for a checkpoint: before, a commit that reached the
    autocheckpoint copied ~40 MB, and the TRUNCATE after pruning ran on the loop."""

    def __init__(self, path: Path, every: float = KEEP_SECONDS, cut_at: int = CUT_BYTES) -> None:
        self.path = path
        self.every = every
        self.cut_at = cut_at
        #: the cuts made since start and the seconds they took, each holding the store's
        #: writers (switchboard_wal_cuts, switchboard_wal_cut_seconds on /metrics)
        self.cuts = 0
        self.cut_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-keeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        wal = self.path.with_name(self.path.name + "-wal")
        failed = ""  # the last failure, logged once (a full disk fails every second)
        seen: tuple[int, int] | None = None  # the WAL as the last caught-up pass left it
        try:
            while not self._stop.wait(self.every):
                try:
                    if _written(wal) == seen:  # idle: nothing written since
                        continue
                    caught_up = _catch_up(db)
                    if _size(wal) > self.cut_at:
                        began = time.perf_counter()
                        _cut(db)
                        self.cuts, self.cut_seconds = (
                            self.cuts + 1, self.cut_seconds + time.perf_counter() - began
                        )  # fmt: skip
                    seen = _written(wal) if caught_up else None
                    failed = ""
                except sqlite3.Error as exc:  # tried again in a second; said once
                    if str(exc) != failed:
                        log.warning("WAL checkpoint of %s failed: %s", self.path, exc)
                    failed = str(exc)
        finally:
            db.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()


def old_files(data_dir: Path, store: Pruned, cutoff: float) -> int:
    """The files of the data dir that have served their purpose: old rotated event logs
    and archived transcripts, and the files people sent that nothing kept names
    (bot/store/prune_files.py); how many went."""
    return remove_old_files(data_dir, cutoff) + remove_unused(store, data_dir, cutoff)


def remove_old_files(data_dir: Path, cutoff: float) -> int:
    """Rotated event logs and archived transcripts last written before `cutoff` (epoch
    seconds); how many went. Daily logs and memory files are never touched."""
    candidates = log_files(data_dir / "events.jsonl")[:-1]
    candidates += list(data_dir.glob("agents/*/archive/*.jsonl"))
    removed = 0
    for path in candidates:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed


@dataclass(slots=True)
class Growth:
    """The figures of growth: bytes, and epoch seconds (None: nothing there)."""

    data_dir_bytes: int
    database_bytes: int
    wal_bytes: int
    oldest_inbound: float | None
    oldest_sent: float | None
    last_prune: PruneRun | None


def tree_bytes(root: Path) -> int:
    """The disk space under `root` as `du` counts it: each file's and folder's allocated
    blocks, links not followed, a hard-linked file once. What fills the disk: a 300-byte
    file takes a whole block, each folder one of its own (a worker's folder of a few small
    files is ~24 KB on disk, not the ~1 KB its files hold)."""
    total, seen = 0, set[tuple[int, int]]()
    for folder, _, files in os.walk(root):
        for path in (folder, *(os.path.join(folder, name) for name in files)):
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            blocks = getattr(st, "st_blocks", None)  # None on Windows: the bytes, then
            total += st.st_size if blocks is None else blocks * 512
    return total


def database_bytes(store: Measured) -> tuple[int, int]:
    """(database, WAL) bytes: the SQLite files, or PostgreSQL's database (no WAL of its
    own: the server's is shared)."""
    if store.postgres:
        row = store.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]), 0
    path = Path(store.where)
    return _size(path), _size(path.with_name(path.name + "-wal"))


def growth(store: Measured, data_dir: Path, walked: int | None = None) -> Growth:
    """The figures now; `walked`: the data dir's bytes as a walk found them lately (None:
    walk it now)."""
    db, wal = database_bytes(store)
    inbound = store.execute("SELECT MIN(received_at) FROM inbound").fetchone()[0]
    sent = store.execute("SELECT MIN(sent_at) FROM outbox WHERE status = 'sent'").fetchone()[0]
    data = tree_bytes(data_dir) if walked is None else walked
    return Growth(data, db, wal, inbound, sent, last_run(store))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
