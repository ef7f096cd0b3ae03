"""Bounded growth on disk: the SQLite WAL stays under a fixed size under a steady write
load, and a checkpoint cuts it back to nothing; events.jsonl is rotated by size, read
across its rotated files, and old rotated files and archives are removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bot.core.events import EventLog, log_files, read_events
from bot.store import growth
from bot.store.core import Store
from tests.kits.app_kit import inbound

PAYLOAD = "x" * 8_000


def wal(path: Path) -> int:
    side = path.with_name(path.name + "-wal")
    return side.stat().st_size if side.exists() else 0


def test_the_wal_stays_bounded_under_a_write_loop(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.db"
    store = Store(path)
    reader = Store(path, readonly=True)
    largest = 0
    try:
        for batch in range(120):  # ~100 MB written through the journal, 100 rows a commit
            with store.tx():
                for i in range(100):
                    store.journal(inbound(PAYLOAD, message_id=f"{batch}-{i}"), "routed")
            reader.execute("SELECT COUNT(*) FROM inbound WHERE id < 5").fetchone()  # a reader
            largest = max(largest, wal(path))
        assert largest <= growth.JOURNAL_LIMIT, largest
        assert growth.checkpoint(store)
        assert wal(path) == 0
    finally:
        reader.close()
        store.close()


def test_events_rotate_by_size_and_are_read_across_files(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=64 * 1024, keep=3)
    began = time.time()
    for i in range(3000):
        log.emit("message.received", "coordinator", n=i, text="y" * 40)
    log.close()
    files = log_files(path)
    assert [f.name for f in files] == [
        "events.jsonl.3",
        "events.jsonl.2",
        "events.jsonl.1",
        "events.jsonl",
    ]
    assert all(f.stat().st_size <= 64 * 1024 + 200 for f in files)
    numbers = [e.data["n"] for e in read_events(path, began - 1)]
    assert numbers == sorted(numbers) and numbers[-1] == 2999
    assert len(numbers) < 3000  # the oldest file was dropped: the log is bounded


def test_old_rotated_logs_and_archives_are_removed(tmp_path: Path) -> None:
    (tmp_path / "agents/coordinator/archive").mkdir(parents=True)
    old_archive = tmp_path / "agents/coordinator/archive/slack-C1-1.jsonl"
    new_archive = tmp_path / "agents/coordinator/archive/slack-C1-2.jsonl"
    daily = tmp_path / "agents/coordinator/2026-01-01.md"
    for f in (
        old_archive,
        new_archive,
        daily,
        tmp_path / "events.jsonl.1",
        tmp_path / "events.jsonl",
    ):
        f.write_text("{}\n")
    long_ago = time.time() - 200 * 86_400
    for f in (old_archive, daily, tmp_path / "events.jsonl.1", tmp_path / "events.jsonl"):
        os.utime(f, (long_ago, long_ago))
    assert growth.remove_old_files(tmp_path, time.time() - 90 * 86_400) == 2
    assert not old_archive.exists() and not (tmp_path / "events.jsonl.1").exists()
    assert new_archive.exists() and daily.exists() and (tmp_path / "events.jsonl").exists()
