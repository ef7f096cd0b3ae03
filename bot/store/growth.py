"""How big the data dir has grown, and what keeps it from growing for ever: the SQLite
WAL checkpointed and truncated, old rotated event logs and archived transcripts removed
(the pruner's files, bot/store/prune.py), and the figures `switchboard status`, the
dashboard and /metrics show (data dir, database and WAL size, the oldest row kept, the
last pruning).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.core.events import log_files
from bot.store.prune import Pruned, Pruner, PruneRun, last_run

if TYPE_CHECKING:
    from config.settings import Database, Settings

log = logging.getLogger(__name__)

#: the WAL is checkpointed by SQLite every this many pages (~40 MB: hot pages are copied
#: back once per checkpoint, bench_core), and cut back to JOURNAL_LIMIT after each one
AUTOCHECKPOINT_PAGES = 10_000
JOURNAL_LIMIT = 64 * 1024 * 1024


class Measured(Pruned, Protocol):
    """The store as growth sees it: its SQL, and where its database is."""

    @property
    def postgres(self) -> bool: ...

    @property
    def where(self) -> Database: ...


def tune_sqlite(db: object) -> None:
    """The pragmas that bound the WAL of a writing connection (bot/store/core.py)."""
    execute = db.execute  # type: ignore[attr-defined]
    execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    execute(f"PRAGMA journal_size_limit={JOURNAL_LIMIT}")


def pruner(store: Measured, settings: Settings) -> Pruner:
    """The pruner of a bot: its retention settings, its data dir's files, the WAL
    checkpointed after each run."""
    p = Pruner(
        store,
        settings.retention,
        settings.audit_retention,
        files=partial(remove_old_files, settings.data_dir),
    )
    p.after = partial(checkpoint, store)
    return p


def checkpoint(store: Measured) -> bool:
    """SQLite: copy the WAL into the database and cut the WAL file to nothing
    (`wal_checkpoint(TRUNCATE)`); False when a reader kept it from finishing (it is
    tried again at the next run). PostgreSQL: nothing (autovacuum's and the server's)."""
    if store.postgres:
        return True
    busy = store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return not busy


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
    """Bytes of every file under `root` (not following links)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def database_bytes(store: Measured) -> tuple[int, int]:
    """(database, WAL) bytes: the SQLite files, or PostgreSQL's database (no WAL of its
    own: the server's is shared)."""
    if store.postgres:
        row = store.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]), 0
    path = Path(store.where)
    return _size(path), _size(path.with_name(path.name + "-wal"))


def growth(store: Measured, data_dir: Path) -> Growth:
    db, wal = database_bytes(store)
    inbound = store.execute("SELECT MIN(received_at) FROM inbound").fetchone()[0]
    sent = store.execute("SELECT MIN(created_at) FROM outbox WHERE status = 'sent'").fetchone()[0]
    return Growth(tree_bytes(data_dir), db, wal, inbound, sent, last_run(store))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
