"""Knowledge flow benchmark (issue 34, item 1). Run:
`.venv/bin/python -m tests.bench.bench_knowledge`.

Prints:
1. what the team news cost a turn (`team_news`, on the event loop at every turn's
   context block) over 200 team topics written today and 300 decisions in two days;
2. a team note written with revision and history (`Shared.add_note`: lock, read,
   revise, atomic rewrite, fsynced history append), p50/p99 over 200 writes of 10
   subjects (most of them replace an older line).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from agents.memory.news import team_news
from agents.memory.shared import Shared


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000


def main() -> None:
    shared = Shared(Path(tempfile.mkdtemp()), 10_000_000, "UTC", 0)
    for n in range(200):
        shared.learn(f"topic-{n}", f"# topic {n}\n" + "- a fact about a system\n" * 20, "bench")
    for n in range(300):
        shared.add_decision(f"Decision {n} about the release plan", "bench")
    news: list[float] = []
    for _ in range(100):
        start = time.perf_counter()
        team_news(shared, "")
        news.append(time.perf_counter() - start)
    print(
        f"team_news, 200 topics + 300 decisions: p50 {percentile(news, 0.5):.1f} ms, "
        f"p99 {percentile(news, 0.99):.1f} ms"
    )
    writes: list[float] = []
    for n in range(200):
        start = time.perf_counter()
        shared.add_note("facts", f"The host {n % 10} is h{n}.acme.test", "bench")
        writes.append(time.perf_counter() - start)
    print(
        f"add_note with revision + history: p50 {percentile(writes, 0.5):.1f} ms, "
        f"p99 {percentile(writes, 0.99):.1f} ms"
    )
    shared.close()


if __name__ == "__main__":
    main()
