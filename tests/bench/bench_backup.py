"""Upgrade and backup on a big data dir: migration time, backup time, writers meanwhile.

    .venv/bin/python tests/bench/bench_backup.py [messages]

Builds a data dir at schema version 0 (a5b872b's tables, as last week's main left it)
holding `messages` journaled messages (default 200,000) and 1,000 parked workers, then
prints: the start-time migration to the newest version (the kept copy and the
migrations apart), and `switchboard backup` of that data dir while a writer journals
messages as fast as it can, the writer's rate and its worst write alone and meanwhile.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.store import migrations  # noqa: E402
from bot.store.backup import backup  # noqa: E402
from bot.store.core import Store  # noqa: E402
from bot.store.migrations_sql import V1_TABLES  # noqa: E402

PAYLOAD = json.dumps({"text": "x" * 300})


def build(path: Path, messages: int) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in migrations.statements(V1_TABLES):
        db.execute(statement)
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO inbound (channel, message_id, conversation, payload, status, received_at)"
        " VALUES ('slack', ?, 'slack:C1', ?, 'routed', ?)",
        ((str(i), PAYLOAD, 1.7e9 + i) for i in range(messages)),
    )
    db.executemany(
        "INSERT INTO workers (id, name, task, status, state, created_at, updated_at)"
        " VALUES (?, 'w', 'task', 'parked', '{}', 0, 0)",
        ((f"w{i}",) for i in range(1000)),
    )
    db.execute("COMMIT")
    db.close()


def writer(path: Path, stop: threading.Event, out: list[float]) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA busy_timeout=5000")
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        db.execute(
            "INSERT INTO inbound (channel, message_id, conversation, payload, status,"
            " received_at) VALUES ('bench', ?, 'c', ?, 'routed', 0)",
            (f"{id(out)}-{i}", PAYLOAD),
        )
        out.append(time.perf_counter() - t0)
        i += 1
    db.close()


def timed_writes(path: Path, during: Callable[[], object]) -> list[float]:
    """The time of each write made while `during` runs."""
    stop, out = threading.Event(), []  # type: ignore[var-annotated]
    thread = threading.Thread(target=writer, args=(path, stop, out))
    thread.start()
    during()
    stop.set()
    thread.join()
    return out


def report(name: str, writes: list[float], seconds: float) -> None:
    print(
        f"  writer {name}: {len(writes) / seconds:,.0f} writes/s, worst {max(writes) * 1000:.1f} ms"
    )


def main() -> None:
    messages = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        db = data / "switchboard.db"
        build(db, messages)
        size = db.stat().st_size
        print(
            f"data dir: {messages:,} journaled messages, 1,000 parked workers, {size / 1e6:.0f} MB"
        )
        t0 = time.perf_counter()
        source = sqlite3.connect(db)
        migrations.keep_copy(source, Path(tmp) / "copy.db")
        source.close()
        print(f"the copy kept before migrating: {(time.perf_counter() - t0) * 1000:.0f} ms")
        t0 = time.perf_counter()
        Store(db).close()
        total = time.perf_counter() - t0
        print(f"start-time migration 0 -> {migrations.VERSION} (copy kept): {total * 1000:.0f} ms")
        report("alone", timed_writes(db, lambda: time.sleep(1.0)), 1.0)
        spans: list[float] = []

        def run_backup() -> None:
            t1 = time.perf_counter()
            backup(data, Path(tmp) / "bk")
            spans.append(time.perf_counter() - t1)

        writes = timed_writes(db, run_backup)
        print(f"backup while writing: {spans[0] * 1000:.0f} ms")
        report("during backup", writes, spans[0])


if __name__ == "__main__":
    main()
