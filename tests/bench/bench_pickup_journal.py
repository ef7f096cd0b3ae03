"""Pickup latency with a big inbound journal (issue 33): does months of handled messages
slow the next one down?

    .venv/bin/python tests/bench/bench_pickup_journal.py [--rows 0,1000000,3000000]
        [--samples 300] [--explain]
    .venv/bin/python tests/bench/bench_pickup_journal.py --store-only 1000000

For each journal size: a SQLite data dir with 1,000 parked workers (bench_core's seed)
whose `inbound` journal is filled with that many handled (`routed`) rows, spread over the
last 60 days (inside the default 90-day retention, so nothing is pruned), thousands of
conversations, payloads the size of a real Slack message's; then the running app's
pickup p50/p99 as bench_core measures it (a message accepted -> the coordinator's
request at the fake model). The fill is one `INSERT ... SELECT` over a recursive CTE per
million rows (~0.3 GB a million). Target: p99 with 10 million rows within 20% of the
empty journal's. `--explain` prints SQLite's plan of every query the message path and
the start run against `inbound`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.store.core import Store  # noqa: E402
from tests.bench.bench_core import pickup  # noqa: E402
from tests.kits.app_kit import inbound  # noqa: E402

PARKED = 1000
BATCH = 1_000_000
DAYS = 60
#: what the message path and the start ask of `inbound` (bot/store/core.py, views.py,
#: prune.py): the plan of each must not scan the table
QUERIES = {
    "journal (duplicate check)": "INSERT INTO inbound (channel, message_id, conversation,"
    " payload, status, received_at) VALUES ('slack', 'x', 'c', '{{}}', 'pending', 0)"
    " ON CONFLICT DO NOTHING",
    "mark routed": "UPDATE inbound SET status = 'routed' WHERE id = 5",
    "restore pending": "SELECT id, payload FROM inbound WHERE status = 'pending'"
    " AND status <> 'routed' ORDER BY id",
    "by message id": "SELECT id, payload FROM inbound WHERE channel = 'slack' AND message_id = 'x'",
    "recent of a channel": "SELECT id, payload FROM inbound WHERE channel || '' = 'slack'"
    " AND received_at >= {day} AND received_at < {now} ORDER BY received_at DESC, id DESC LIMIT 50",
    "prune: recent places": "SELECT DISTINCT conversation FROM inbound WHERE received_at >= {day}",
}


def payload() -> str:
    """A journaled Slack message as the store writes it, `{i}` where its number goes."""
    msg = inbound("can someone look at the deploy of {i}? it failed twice", channel="slack")
    return json.dumps(msg.to_json())


def fill(db: Path, rows: int) -> float:
    """`rows` routed messages, oldest first; seconds it took."""
    t0 = time.perf_counter()
    start = time.time() - DAYS * 86400
    step = DAYS * 86400 / max(rows, 1)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")  # the fill only: the app reopens it as it does
    for first in range(0, rows, BATCH):
        count = min(BATCH, rows - first)
        con.execute(
            "INSERT INTO inbound (channel, message_id, conversation, payload, status,"
            " received_at) WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n"
            " WHERE i < ?) SELECT 'slack', printf('%017.6f', ? + i * ?),"
            " 'C' || (i % 97) || ':' || (i / 20), replace(?, '{i}', i), 'routed',"
            " ? + i * ? FROM n",
            (first, first + count - 1, start, step, payload(), start, step),
        )
        con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return time.perf_counter() - t0


def explain(db: Path) -> None:
    con = sqlite3.connect(db)
    now = time.time()
    for label, template in QUERIES.items():
        sql = template.format(day=now - 86400, now=now)
        plan = " | ".join(row[3] for row in con.execute("EXPLAIN QUERY PLAN " + sql))
        took = ""
        if sql.startswith("SELECT"):
            t0 = time.perf_counter()
            con.execute(sql).fetchall()
            took = f"  ({(time.perf_counter() - t0) * 1000:.1f} ms)"
        print(f"    {label:26} {plan}{took}")
    con.close()


def store_work(rows: int, rounds: int = 20, batch: int = 100) -> None:
    """The journal's share of a pickup, load-proof: a message journaled and marked routed
    (what the human node does to the journal per message), in batches alternating between
    an empty journal and one of `rows` rows, so a busy machine weighs on both alike."""
    dirs = [Path(tempfile.mkdtemp()) for _ in range(2)]
    stores = [Store(d / "switchboard.db") for d in dirs]
    fill(dirs[1] / "switchboard.db", rows)
    stores = [Store(d / "switchboard.db") for d in dirs]  # reopened as the app opens it
    times: list[list[float]] = [[], []]
    for r in range(rounds):
        for side, store in enumerate(stores):
            for i in range(batch):
                t0 = time.perf_counter()
                msg = inbound("ping", conversation=f"c{i}", message_id=f"p{r}-{i}")
                row = store.journal(msg)
                assert row is not None
                store.mark_inbound(row, "routed")
                times[side].append((time.perf_counter() - t0) * 1e6)
    for side, label in enumerate(("empty", f"{rows:,} rows")):
        q = statistics.quantiles(times[side], n=100)
        print(f"  journal + mark, {label:>12}: p50 {q[49]:7.0f} us   p99 {q[98]:7.0f} us")
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def measure(rows: int, samples: int, show_plan: bool) -> tuple[float, float]:
    """Pickup p50, p99 (ms) over a journal of `rows` handled messages."""
    dirs: list[Path] = []

    def prepare(data_dir: Path) -> None:
        dirs.append(data_dir)
        took = fill(data_dir / "switchboard.db", rows)
        if show_plan:
            explain(data_dir / "switchboard.db")
        size = sum(f.stat().st_size for f in data_dir.glob("switchboard.db*")) / 2**20
        print(f"  {rows:>10,} rows: filled in {took:.0f} s, database {size:,.0f} MB", flush=True)

    try:
        return asyncio.run(pickup(PARKED, samples, None, prepare))
    finally:
        for path in dirs:
            shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="0,1000000,10000000", help="journal sizes")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--store-only", type=int, metavar="ROWS", help="the journal's share")
    args = parser.parse_args()
    if args.store_only:
        store_work(args.store_only)
        return
    base = None
    for rows in (int(r) for r in args.rows.split(",")):
        p50, p99 = measure(rows, args.samples, args.explain)
        base = p99 if base is None else base
        print(
            f"  {rows:>10,} handled rows, {PARKED:,} parked: pickup p50 {p50:6.2f} ms"
            f"   p99 {p99:6.2f} ms   ({(p99 / base - 1) * 100:+.0f}% vs the first size)",
            flush=True,
        )


if __name__ == "__main__":
    main()
