"""PostgreSQL beside SQLite: routed messages/s, pickup latency, restart (issue 20).

    .venv/bin/python tests/bench/bench_postgres.py [--quick]

Runs bench_core's measures (tests/bench/bench_core.py) on both backends in the same
run: routed messages/s (journal + route, one transaction a message) and pickup latency
p50/p99 at 0 and 1,000 parked workers, and the restart of one node over 1,000 parked
workers (time to ready, resident memory). PostgreSQL is a private cluster
(tests/pgcluster.py) with production's durability (fsync, full-page writes and
synchronous_commit on; the output says so), on the same host: every commit waits for
its WAL flush, as SQLite's commits in WAL mode with synchronous=NORMAL do not. Each
measure gets a fresh database. Then it counts the statements (each one a round trip)
that one routed message sends to PostgreSQL, by a counter around
`bot.store.postgres.Connection.execute`. Targets on PostgreSQL: >= 2,000 msg/s and
pickup p99 <= 20 ms at 1,000 parked. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.store import postgres  # noqa: E402
from tests.bench.bench_core import database_env, pickup, restart, routing  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kit import Recorder, inbound, make_settings, running_app  # noqa: E402
from tests.pgcluster import PgCluster, pg_running  # noqa: E402

BACKENDS = ("SQLite", "PostgreSQL")


def durability(cluster: PgCluster) -> str:
    with cluster.connect() as conn:
        rows = conn.execute(
            "SELECT name || '=' || setting FROM pg_settings WHERE name IN"
            " ('fsync', 'full_page_writes', 'synchronous_commit', 'server_version')"
        ).fetchall()
    return ", ".join(row[0] for row in rows)


@contextmanager
def counting() -> Iterator[collections.Counter[str]]:
    """Every statement the PostgreSQL adapter sends, counted by its text."""
    sent: collections.Counter[str] = collections.Counter()
    execute, executemany = postgres.Connection.execute, postgres.Connection.executemany

    def count(method: Any) -> Any:
        def wrapper(self: postgres.Connection, sql: str, *args: Any) -> Any:
            sent[" ".join(sql.split())[:90]] += 1
            return method(self, sql, *args)

        return wrapper

    postgres.Connection.execute = count(execute)  # type: ignore[method-assign]
    postgres.Connection.executemany = count(executemany)  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        postgres.Connection.execute = execute  # type: ignore[method-assign]
        postgres.Connection.executemany = executemany  # type: ignore[method-assign]


async def round_trips(url: str, n: int = 500) -> tuple[collections.Counter[str], int | None]:
    """The statements `n` routed messages send (as bench_core's routing routes them),
    and the adapter's prepare_threshold."""
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    settings = make_settings(Path(tempfile.mkdtemp()), fake, **database_env(url))
    async with running_app(settings, [Recorder()]) as app:
        app.team.spawn("Parker", "sit", "x", "terminal")
        note = [inbound(f"@parker note {i}", conversation=f"c{i % 50}") for i in range(50 + n)]
        for msg in note[:50]:  # the first in each conversation also stores its speaker
            app.human.accept(msg)
        with counting() as sent:
            for msg in note[50:]:
                app.human.accept(msg)
        threshold = app.store.db.raw.prepare_threshold
        await app.team.stop("Parker")
    fake.stop()
    return sent, threshold


def database(cluster: PgCluster, backend: str) -> str | None:
    """A fresh PostgreSQL database's URL; None for SQLite (a file in a fresh data dir)."""
    return None if backend == "SQLite" else cluster.url(cluster.create_database())


def measure(cluster: PgCluster, quick: bool) -> dict[str, list[str]]:
    """Each row of the table: its label, then the figure on each backend."""
    samples, n = (120, 3000) if quick else (300, 10000)
    rows: dict[str, list[str]] = collections.defaultdict(list)
    for backend in BACKENDS:
        for parked in (0, 1000):
            p50, p99 = asyncio.run(pickup(parked, samples, database(cluster, backend)))
            rows[f"pickup p50 / p99, {parked:,} parked (ms)"].append(f"{p50:.2f} / {p99:.2f}")
            rate = asyncio.run(routing(n, parked, database(cluster, backend)))
            rows[f"routed msg/s, {parked:,} parked"].append(f"{rate:,.0f}")
        ready, rss = restart(1000, database(cluster, backend))
        rows["restart, 1,000 parked: ready (s) / RSS (MB)"].append(f"{ready:.2f} / {rss:.0f}")
        print(f"  ({backend} done)", flush=True)
    return rows


def table(rows: dict[str, list[str]]) -> str:
    targets = {
        "pickup p50 / p99, 1,000 parked (ms)": "p99 <= 20",
        "routed msg/s, 1,000 parked": ">= 2,000",
    }
    lines = ["| measure | SQLite | PostgreSQL | target (PostgreSQL) |", "|---|---|---|---|"]
    for label, figures in rows.items():
        lines.append(f"| {label} | {' | '.join(figures)} | {targets.get(label, '')} |")
    return "\n".join(lines)


def report_round_trips(sent: collections.Counter[str], threshold: int | None, n: int = 500) -> None:
    total = sum(sent.values())
    print(
        f"\nround trips per routed message on PostgreSQL: {total / n:.2f}"
        f" (prepare_threshold={threshold})"
    )
    for statement, count in sent.most_common():
        print(f"  {count / n:5.2f}  {statement}")


def main() -> None:
    quick = "--quick" in sys.argv
    with pg_running(durable=True) as cluster:
        print(f"PostgreSQL on this host: {durability(cluster)}", flush=True)
        rows = measure(cluster, quick)
        print(table(rows))
        report_round_trips(*asyncio.run(round_trips(cluster.url(cluster.create_database()))))


if __name__ == "__main__":
    main()
