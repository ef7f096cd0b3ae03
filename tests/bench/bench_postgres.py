"""PostgreSQL beside SQLite: routed messages/s, pickup latency, restart (issue 20).

    .venv/bin/python tests/bench/bench_postgres.py [--quick]

Runs bench_core's measures (tests/bench/bench_core.py) on both backends in the same
run: routed messages/s (journal + route, one transaction a message) and pickup latency
p50/p99 at 0 and 1,000 parked workers, and the restart of one node over 1,000 parked
workers (time to ready, resident memory); each the median of 3 runs (1 with --quick),
each run on a fresh database. PostgreSQL is a private cluster on this host
(tests/kits/pgcluster.py), reached over TCP (127.0.0.1, as a node on another host would,
less the network) and over its unix socket, with production's durability: fsync,
full-page writes and
synchronous_commit on (the output says so, with the median time of one commit), so
every commit waits for its WAL flush, which SQLite's commits (WAL, synchronous=NORMAL)
do not. Then it counts the statements, each one round trip, that one routed message
sends to PostgreSQL (a counter around `bot.store.postgres.Connection.execute`).
Targets on PostgreSQL: >= 2,000 msg/s and pickup p99 <= 20 ms at 1,000 parked. The
host's load average is printed before and after: on a shared machine the figures move
with it. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import collections
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.store.postgres import Connection as Adapter  # noqa: E402
from tests.bench.bench_core import database_env, pickup, restart, routing  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app  # noqa: E402
from tests.kits.pgcluster import PgCluster, pg_running  # noqa: E402

#: PostgreSQL over TCP (as from another host, here 127.0.0.1) and over the unix socket
#: (a node on the database's host)
BACKENDS = ("SQLite", "PostgreSQL", "PostgreSQL, unix socket")


def durability(cluster: PgCluster) -> str:
    with cluster.connect() as conn:
        rows = conn.execute(
            "SELECT name || '=' || setting FROM pg_settings WHERE name IN"
            " ('fsync', 'full_page_writes', 'synchronous_commit', 'server_version')"
        ).fetchall()
    return ", ".join(row[0] for row in rows)


@contextmanager
def counting() -> Iterator[collections.Counter[str]]:
    """The statements the store hands the PostgreSQL adapter, counted by their text."""
    sent: collections.Counter[str] = collections.Counter()
    with ExitStack() as stack:
        for name in ("execute", "executemany"):
            stack.enter_context(_counted(name, sent))
        yield sent


@contextmanager
def _counted(name: str, sent: collections.Counter[str]) -> Iterator[None]:
    method = getattr(Adapter, name)

    def wrapper(self: Adapter, sql: str, *args: Any) -> Any:
        sent[" ".join(sql.split())[:90]] += 1
        return method(self, sql, *args)

    setattr(Adapter, name, wrapper)
    try:
        yield
    finally:
        setattr(Adapter, name, method)


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


def median_of(runs: int, figures: Callable[[], Any]) -> list[float]:
    """Each figure's median over `runs` runs (this host is shared: one run can be off)."""
    results = []
    for _ in range(runs):
        result = figures()
        results.append(result if isinstance(result, tuple) else (result,))
    return [statistics.median(column) for column in zip(*results, strict=True)]


class Backend:
    """bench_core's measures on one backend, each on a fresh database, median of `runs`."""

    def __init__(self, cluster: PgCluster, name: str, runs: int, quick: bool) -> None:
        self.cluster, self.name, self.runs = cluster, name, runs
        self.samples, self.messages = (120, 3000) if quick else (300, 10000)

    def fresh(self) -> str | None:
        """A fresh PostgreSQL database's URL; None for SQLite (a file in a fresh data dir)."""
        if self.name == "SQLite":
            return None
        return self.cluster.url(self.cluster.create_database(), unix="unix" in self.name)

    def pickup(self, parked: int) -> str:
        p50, p99 = median_of(
            self.runs, lambda: asyncio.run(pickup(parked, self.samples, self.fresh()))
        )
        return f"{p50:.2f} / {p99:.2f}"

    def routing(self, parked: int) -> str:
        (rate,) = median_of(
            self.runs, lambda: asyncio.run(routing(self.messages, parked, self.fresh()))
        )
        return f"{rate:,.0f}"

    def restart(self) -> str:
        ready, rss = median_of(self.runs, lambda: restart(1000, self.fresh()))
        return f"{ready:.2f} / {rss:.0f}"


def measure(cluster: PgCluster, runs: int, quick: bool) -> dict[str, list[str]]:
    """Each row of the table: its label, then the figure on each backend."""
    rows: dict[str, list[str]] = collections.defaultdict(list)
    for name in BACKENDS:
        backend = Backend(cluster, name, runs, quick)
        for parked in (0, 1000):
            rows[f"pickup p50 / p99, {parked:,} parked (ms)"].append(backend.pickup(parked))
            rows[f"routed msg/s, {parked:,} parked"].append(backend.routing(parked))
        rows["restart, 1,000 parked: ready (s) / RSS (MB)"].append(backend.restart())
        print(f"  ({name} done)", flush=True)
    return rows


def commit_latency(cluster: PgCluster, n: int = 500) -> float:
    """The median time of one single-row commit (its WAL flush included), in ms."""
    times = []
    with cluster.connect(cluster.create_database()) as conn:
        conn.execute("CREATE TABLE t (k int PRIMARY KEY)")
        for i in range(n):
            t0 = time.perf_counter()
            conn.execute("INSERT INTO t VALUES (%s)", (i,))
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def table(rows: dict[str, list[str]]) -> str:
    targets = {
        "pickup p50 / p99, 1,000 parked (ms)": "p99 <= 20",
        "routed msg/s, 1,000 parked": ">= 2,000",
    }
    lines = [f"| measure | {' | '.join(BACKENDS)} | target (PostgreSQL) |"]
    lines.append("|---" * (len(BACKENDS) + 2) + "|")
    for label, figures in rows.items():
        lines.append(f"| {label} | {' | '.join(figures)} | {targets.get(label, '')} |")
    return "\n".join(lines)


def report_round_trips(sent: collections.Counter[str], threshold: int | None, n: int = 500) -> None:
    print(
        f"\nper routed message on PostgreSQL: {sum(sent.values()) / n:.2f} statements, each"
        f" one round trip (psycopg's prepare_threshold={threshold}: repeated ones are prepared)"
    )
    for statement, count in sent.most_common():
        print(f"  {count / n:5.2f}  {statement}")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 1 if quick else 3
    with pg_running(durable=True) as cluster:
        print(f"PostgreSQL on this host: {durability(cluster)}")
        print(f"one commit: {commit_latency(cluster):.3f} ms (median); {load()}", flush=True)
        rows = measure(cluster, runs, quick)
        print(f"median of {runs} run(s) each; {load()}")
        print(table(rows))
        report_round_trips(*asyncio.run(round_trips(cluster.url(cluster.create_database()))))


if __name__ == "__main__":
    main()
