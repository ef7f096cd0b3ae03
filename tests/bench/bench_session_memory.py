"""Benchmark: the memory one conversation with work under way holds, without a soak.

    .venv/bin/python tests/bench/bench_session_memory.py [--sessions 500] [--workers 50]

The real `App` is built (tests/kits/app_kit.py) against the fake Anthropic API with an
empty data dir, then N coordinator sessions and M workers are made as the app makes
them (`Coordinator._session`, `Worker(...)`), each with what a turn under way holds:
its toolbox's tool definitions, its system prompt and the request body of its next
model call (tests/kits/session_kit.py). tracemalloc compares a snapshot before with one
after and prints the bytes per session and the 10 allocation sites that hold the most
per session, then what is still held once the sessions ended (a leak per session).
What is the same for every session of one agent kind (the tool definitions) should cost
nothing per session; what is left is the session's own state.

Last, resident memory (SQLite's own, which tracemalloc does not see) after 400 workers
each wrote and searched their memory, as a soak's workers do one after another.

Measured on this machine (500 coordinator sessions + 50 workers; before = main at
d671370): under way 26,096 -> 13,045 bytes per session (the shared tool definitions,
then the memory tools' handlers); left once ended 8,622 -> 325 (100 coordinator
sessions + 900 workers: 7,792 -> 608); 400 workers' memories: RSS +92.5 MB with 453
open -> +1.2 MB with 32 open (OPEN_AGENTS_MAX).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tracemalloc import Snapshot

from bot.app import App
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.session_kit import built_app
from tests.kits.session_kit import sessions as build

FRAMES = 4


@dataclass
class Figures:
    shared: bool  # two coordinator sessions send the same tool list object
    live: float  # bytes per session while its work is under way
    top: list[tuple[str, float]]  # the sites holding the most, bytes per session
    left: float  # bytes per session still held after the sessions ended


def per_session(before: Snapshot, count: int) -> tuple[float, list[tuple[str, float]]]:
    """Bytes per session since `before`, and the 10 sites holding the most."""
    gc.collect()
    stats = tracemalloc.take_snapshot().compare_to(before, "traceback")
    top = []
    for stat in sorted(stats, key=lambda s: -s.size_diff)[:10]:
        frames = reversed(stat.traceback)  # the allocating line first, then its callers
        where = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames)
        top.append((where, stat.size_diff / count))
    return sum(s.size_diff for s in stats) / count, top


def end(app: App, held: list[tuple[Any, ...]]) -> None:
    """The sessions' work is over: they leave as the app lets them go."""
    for session, *_ in held:
        if session in app.coordinator.sessions.values():
            app.coordinator.closed(session)
        else:
            app.services.bus.unregister(session.agent_id)
    held.clear()


def measure(app: App, sessions: int, workers: int) -> Figures:
    end(app, build(app, 5, 2, 10**5))  # warm: lazy imports, first prompts, souls seeded
    gc.collect()
    before = tracemalloc.take_snapshot()
    held = build(app, sessions, workers, 0)
    count = sessions + workers
    first, second = held[0][0], held[1][0]
    shared = first.toolbox.specs is second.toolbox.specs
    live, top = per_session(before, count)
    end(app, held)
    del first, second
    left, _ = per_session(before, count)
    return Figures(shared, live, top, left)


async def run(sessions: int, workers: int) -> None:
    fake = FakeAnthropic().start()
    try:
        with built_app(Path(tempfile.mkdtemp()), fake) as app:
            tracemalloc.start(FRAMES)
            got = measure(app, sessions, workers)
            tracemalloc.stop()
            print(f"sessions: {sessions} coordinator + {workers} workers")
            print(f"tool definitions shared between two coordinator sessions: {got.shared}")
            print(f"bytes per session while under way: {got.live:,.0f}")
            print("top 10 allocation sites, bytes per session:")
            for where, size in got.top:
                print(f"  {size:>9,.0f}  {where}")
            print(f"bytes per session left once the sessions ended: {got.left:,.0f}")
            print(open_memories(app, 400))
    finally:
        fake.stop()


def resident_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGESIZE") / 1e6


def open_memories(app: App, agents: int) -> str:
    """Resident memory (not seen by tracemalloc: SQLite's own) after `agents` workers
    each wrote and searched their memory, as a soak's workers do one after another."""
    memory = app.services.memory
    assert memory is not None
    gc.collect()
    before = resident_mb()
    for i in range(agents):
        mine = memory.agent(f"soak{i}")
        mine.remember(f"worker {i} restarted the service", "")
        mine.search("restarted")
    gc.collect()
    held = len(memory._agents)
    return f"{agents} workers' memories used: RSS +{resident_mb() - before:.1f} MB, {held} open"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--workers", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.workers))


if __name__ == "__main__":
    main()
