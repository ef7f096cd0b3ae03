"""The soak's samples and its verdict (tests/bench/bench_soak.py): what is read of the
running bot (its /metrics, the database and WAL size), the slope of each sample after
warm-up, and the `PASS ...` / `FAIL ...` line naming what grows."""

from __future__ import annotations

import statistics
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bot.store.growth import JOURNAL_LIMIT

#: warm-up left out of the slopes: the first third of the samples
WARM = 1 / 3


@dataclass
class Sample:
    t: float
    rss: float
    fds: int
    tasks: float
    db: float
    wal: float
    data: float
    pickup_ms: float
    p99_ms: float = float("nan")
    backlog: int = 0
    lag_ms: float = float("nan")  # the event loop's worst lag since the last sample


def metrics(port: int, *names: str) -> list[float]:
    """The named gauges of one scrape (a worst-since-the-last-scrape one is reset by it)."""
    found = dict.fromkeys(names, float("nan"))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            for line in reply.read().decode().splitlines():
                name, _, value = line.partition(" ")
                if name in found:
                    found[name] = float(value.split()[0])  # a timestamp may follow
    except OSError:
        pass
    return [found[n] for n in names]


def db_sizes(data: Path, pg_url: str | None) -> tuple[float, float]:
    if pg_url is None:
        db = data / "switchboard.db"
        wal = data / "switchboard.db-wal"
        return (
            db.stat().st_size / 1e6 if db.exists() else 0.0,
            wal.stat().st_size / 1e6 if wal.exists() else 0.0,
        )
    import psycopg

    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return (row[0] / 1e6 if row else 0.0), 0.0


#: the largest tables, where each one's size went and whether autovacuum kept up
PG_TABLES = (
    "SELECT s.relname, pg_total_relation_size(s.relid), pg_relation_size(s.relid),"
    " COALESCE(pg_total_relation_size(c.reltoastrelid), 0), pg_indexes_size(s.relid),"
    " s.n_live_tup, s.n_dead_tup, s.n_tup_upd, s.n_tup_hot_upd, s.autovacuum_count"
    " FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid"
    " ORDER BY pg_total_relation_size(s.relid) DESC LIMIT %s"
)


def pg_tables(pg_url: str, top: int = 6) -> list[str]:
    """The largest tables of a PostgreSQL run, a line each: total MB (heap, TOAST,
    indexes), live and dead rows, updates and how many were HOT, autovacuum runs."""
    import psycopg

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(PG_TABLES, (top,)).fetchall()
    lines = []
    for name, total, heap, toast, indexes, live, dead, upd, hot, vacuums in rows:
        mb = [round(n / 1e6, 1) for n in (total, heap, toast, indexes)]
        lines.append(
            f"  {name}: {mb[0]} MB (heap {mb[1]}, TOAST {mb[2]}, indexes {mb[3]}); {live} rows"
            f" live, {dead} dead; {upd} updates, {hot} HOT; autovacuum {vacuums}x"
        )
    return lines


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(slope per minute, mean) of (seconds, value) points: the median of the slopes
    between every two points (Theil-Sen), so one stray probe (a pickup that met a
    checkpoint, a collection) does not tilt the line as it does a least-squares fit,
    while growth that lasts still does: it takes over 29% of the points wrong to move it."""
    pts = [(t, v) for t, v in points if v == v]  # NaN left out
    if len(pts) < 3:
        return 0.0, pts[0][1] if pts else 0.0
    pairs = [
        (v2 - v1) / (t2 - t1)
        for i, (t1, v1) in enumerate(pts)
        for t2, v2 in pts[i + 1 :]
        if t2 > t1
    ]
    return statistics.median(pairs) * 60 if pairs else 0.0, statistics.fmean(v for _, v in pts)


#: (field, unit, growth over the measured window that fails: relative, absolute)
LIMITS = {
    "rss": ("MB", 0.10, 8.0),
    "fds": ("", 0.25, 10.0),
    "tasks": ("", 0.25, 25.0),
    "pickup_ms": ("ms", 0.50, 50.0),
    "db": ("MB", 0.25, 2.0),
    "data": ("MB", 0.25, 4.0),
}
DISK = ("db", "data")


def verdict(samples: list[Sample], retention: float, minutes: float) -> str:
    kept = samples[int(len(samples) * WARM) :]
    window = (kept[-1].t - kept[0].t) / 60 if len(kept) > 1 else 0.0
    judged_disk = minutes * 60 >= 3 * retention
    if judged_disk:  # the disk levels off once a retention window has passed, twice
        kept_disk = [s for s in samples if s.t >= 2 * retention]
    growing, figures = [], []
    for name, (unit, rel, absolute) in LIMITS.items():
        rows = kept_disk if name in DISK and judged_disk else kept
        per_min, mean = slope([(s.t, getattr(s, name)) for s in rows])
        figures.append(f"{name} {per_min:+.3g}{unit}/min")
        grew = per_min * window
        if (name not in DISK or judged_disk) and grew > absolute and grew > rel * abs(mean):
            growing.append(f"{name} (+{grew:.3g}{unit} over {window:.1f} min)")
    wal_max = max(s.wal for s in samples)
    figures.append(f"wal max {wal_max:.1f}MB")
    if wal_max * 1e6 > JOURNAL_LIMIT:
        growing.append(f"wal ({wal_max:.1f} MB > {JOURNAL_LIMIT / 1e6:.0f} MB)")
    if not judged_disk:
        figures.append("disk not judged (run < 3 retention windows)")
    return ("FAIL grows: " + ", ".join(growing) + "; " if growing else "PASS ") + ", ".join(figures)
