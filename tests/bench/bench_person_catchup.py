"""Benchmark for `catchup` (bot/ledger/catchup.py): one person's catchup over a store
holding many delivered messages of many conversations.

    .venv/bin/python tests/bench/bench_person_catchup.py

For 1,000 / 10,000 / 50,000 delivered outbox rows spread over 500 conversations (the
person spoke in 5 of them, an hour ago), 100 open questions and 200 finished workers:
p50 / p99 of `catchup` + its text, in ms, on SQLite. Slack and Discord answer a command
within 3 s, so the target is p99 <= 300 ms at 10,000 rows (every row since the mark is
read back, up to SCAN).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.core.messages import Outbound, Target  # noqa: E402
from bot.ledger.catchup import catchup, catchup_text  # noqa: E402
from bot.store.core import QuestionRow, Store, WorkerRow  # noqa: E402


def fill(store: Store, rows: int, now: float) -> None:
    with store.tx():
        for n in range(rows):
            conv = f"slack:C1/{n % 500}.0"
            msg = Outbound("coordinator", Target.parse(conv), f"answer {n} " * 20, conv)
            at = now - 3600 + n * 3600 / rows
            store.execute(
                "INSERT INTO outbox (id, target, payload, status, next_at, created_at, sent_at)"
                " VALUES (?, ?, ?, 'sent', ?, ?, ?)",
                (msg.id, conv, json.dumps(msg.to_json()), at, at, at),
            )
        for n in range(100):
            conv = f"slack:C1/{n % 500}.0"
            store.agents.add_question(
                QuestionRow(f"q{n}", f"w{n}", "which?", conv, conv, [], "open", now)
            )
        for n in range(200):
            conv = f"slack:C1/{n % 500}.0"
            store.agents.upsert_worker(WorkerRow(f"w{n}", f"W{n}", "task", "done", conv, conv,
                                          updated_at=now))  # fmt: skip


def main() -> None:
    mine = {f"slack:C1/{n}.0" for n in range(5)}
    for rows in (1_000, 10_000, 50_000):
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "db.sqlite")
            now = time.time()
            fill(store, rows, now)
            times = []
            for _ in range(50):
                start = time.perf_counter()
                catchup_text(catchup(store, mine, now - 3600, {}))
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            p99 = times[int(len(times) * 0.99) - 1]
            print(f"{rows:>6} rows: p50 {statistics.median(times):6.1f} ms, p99 {p99:6.1f} ms")
            store.close()


if __name__ == "__main__":
    main()
