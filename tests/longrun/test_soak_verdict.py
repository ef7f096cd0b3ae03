"""The soak's verdict (tests/bench/soak_verdict.py) on samples made up here: growth that
lasts fails, one stray probe does not."""

from __future__ import annotations

import re

import pytest

from tests.bench.soak_verdict import Sample, pg_tables, slope, verdict

MINUTES = 30
RETENTION = 60.0  # seconds: the disk is judged after two of them


def run(pickup: list[float], rss: list[float] | None = None) -> list[Sample]:
    """A sample every 10 s, flat in everything but what is given."""
    rss = rss or [150.0] * len(pickup)
    flat = {"fds": 40, "tasks": 250, "db": 90.0, "wal": 20.0, "data": 160.0}
    return [Sample(10.0 * k, rss[k], pickup_ms=pickup[k], **flat) for k in range(len(pickup))]


def test_one_stray_probe_at_the_end_does_not_fail_a_flat_run() -> None:
    pickup = [10.0 + k % 5 for k in range(MINUTES * 6)]
    pickup[-3] = 5_000.0  # one probe that met a checkpoint on a slow disk, near the end
    line = verdict(run(pickup), RETENTION, MINUTES)
    assert line.startswith("PASS"), line
    # a least-squares line through the same points rises ~12 ms a minute: ~240 ms over the
    # 20 minutes judged, which the old verdict failed (as it failed a PostgreSQL run on
    # one probe of 539 ms among probes of 8-65 ms)
    kept = [(10.0 * k, v) for k, v in enumerate(pickup)][60:]
    mt, mv = (sum(p[i] for p in kept) / len(kept) for i in (0, 1))
    least_squares = sum((t - mt) * (v - mv) for t, v in kept) / sum((t - mt) ** 2 for t, _ in kept)
    assert least_squares * 60 > 10


def test_pickup_that_keeps_growing_fails_naming_it() -> None:
    pickup = [10.0 + 0.5 * k for k in range(MINUTES * 6)]  # +3 ms a minute
    line = verdict(run(pickup), RETENTION, MINUTES)
    assert line.startswith("FAIL grows: pickup_ms"), line


def test_memory_that_grows_in_steps_fails_as_memory() -> None:
    rss = [150.0 + 6.0 * (k // 30) for k in range(MINUTES * 6)]  # +6 MB every 5 minutes
    line = verdict(run([10.0] * len(rss), rss), RETENTION, MINUTES)
    assert line.startswith("FAIL grows: rss"), line


def test_the_slope_is_per_minute_and_leaves_out_missing_points() -> None:
    per_min, mean = slope([(0.0, 1.0), (60.0, 2.0), (120.0, float("nan")), (180.0, 4.0)])
    assert per_min == 1.0
    assert mean == 7 / 3


@pytest.mark.slow
def test_a_postgresql_run_lists_where_its_tables_size_went(pg_url: str) -> None:
    import psycopg

    body = "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 300))"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE talk (id INT PRIMARY KEY, at REAL, body TEXT)")
        conn.execute("CREATE INDEX talk_at ON talk (at)")
        conn.execute(f"INSERT INTO talk SELECT n, n, {body} FROM generate_series(1, 60) n")
        conn.execute("UPDATE talk SET at = at + 1")  # an indexed column: no HOT update
        conn.execute("UPDATE talk SET body = 'short' WHERE id <= 10")  # HOT
        conn.execute("SELECT pg_stat_force_next_flush()")  # its counts, before it answers
    lines = pg_tables(pg_url)
    talk = next(line for line in lines if line.startswith("  talk: "))
    found = re.search(r"TOAST ([\d.]+), indexes [\d.]+\); \d+ rows live, (\d+) dead; "
                      r"(\d+) updates, (\d+) HOT; autovacuum \d+x$", talk)  # fmt: skip
    assert found, talk
    toast, dead, updates, hot = float(found[1]), *map(int, found.groups()[1:])
    assert toast > 0.2 and updates == 70 and 0 < hot <= 10 and dead > 0, talk
