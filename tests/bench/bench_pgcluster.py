"""What the tests' throwaway PostgreSQL (tests/kits/pgcluster.py) costs.

    .venv/bin/python tests/bench/bench_pgcluster.py [rounds]

Prints medians (min-max) over `rounds` (default 20; 3 for whole clusters) of: a cluster
created (initdb + start), and closed; one test's database (pg_url: CREATE DATABASE from
template0, both copy strategies, and from a template holding 30 tables) and its drop;
stop + start, fast and immediate; and single-row commits per second with
synchronous_commit on and off (fsync being off, the reason it is kept on).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.kits.pgcluster import PgCluster  # noqa: E402


def timed(action: Callable[[], object], rounds: int) -> str:
    spent = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        spent.append((time.perf_counter() - start) * 1000)
    return f"{statistics.median(spent):7.1f} ms ({min(spent):.1f}-{max(spent):.1f})"


def clusters(rounds: int) -> None:
    made: list[PgCluster] = []
    started = timed(lambda: made.append(PgCluster().create()), rounds)
    print(f"{'cluster (initdb + start)':26} {started}")
    print(f"{'cluster close (stop, rm)':26} {timed(lambda: made.pop().close(), rounds)}")


def create(cluster: PgCluster, sql: str) -> Callable[[], None]:
    def action() -> None:
        with cluster.connect() as conn:
            conn.execute(sql.format(name=f"bench_{time.perf_counter_ns()}"))

    return action


def prepared_template(cluster: PgCluster) -> str:
    name = cluster.create_database()
    with cluster.connect(name) as conn:
        for n in range(30):
            conn.execute(f"CREATE TABLE t{n} (id bigserial PRIMARY KEY, k text UNIQUE, v jsonb)")
    return name


def commits_per_second(cluster: PgCluster, db: str, synchronous: str) -> float:
    with cluster.connect(db) as conn:
        conn.execute(f"SET synchronous_commit = {synchronous}")
        conn.execute("CREATE TABLE IF NOT EXISTS c (id serial, v text)")
        start = time.perf_counter()
        for _ in range(2000):
            conn.execute("INSERT INTO c (v) VALUES ('x')")  # autocommit: one commit each
        return 2000 / (time.perf_counter() - start)


def restart(cluster: PgCluster, mode: str) -> Callable[[], None]:
    def action() -> None:
        cluster.stop(mode)
        cluster.start()

    return action


def fresh_database(cluster: PgCluster) -> None:
    cluster.drop_database(cluster.create_database())


def measure(cluster: PgCluster, rounds: int) -> None:
    base = "CREATE DATABASE {name} TEMPLATE "
    template = prepared_template(cluster)
    rows = {
        "database (template0)": (create(cluster, base + "template0"), rounds),
        "database (file_copy)": (create(cluster, base + "template0 STRATEGY file_copy"), rounds),
        "database (30 tables)": (create(cluster, base + template), rounds),
        "pg_url (create + drop)": (lambda: fresh_database(cluster), rounds),
        "stop + start (fast)": (restart(cluster, "fast"), 5),
        "stop + start (immediate)": (restart(cluster, "immediate"), 5),
    }
    for label, (action, n) in rows.items():
        print(f"{label:26} {timed(action, n)}")
    for mode in ("on", "off"):
        rate = commits_per_second(cluster, template, mode)
        print(f"commits/s, synchronous_commit={mode}: {rate:,.0f}")


def main(rounds: int) -> None:
    clusters(3)
    cluster = PgCluster().create()
    try:
        measure(cluster, rounds)
    finally:
        cluster.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
