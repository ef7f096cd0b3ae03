"""Core benchmark: pickup latency, routing throughput, restart with parked workers.

    .venv/bin/python tests/bench/bench_core.py

Prints, for 0, 100 and 1,000 parked workers, the pickup latency from a message
accepted by the human node to the coordinator's request arriving at the fake
Messages API (an idle conversation, the fake answering at once); routed messages
per second with journaling on; and the restart time and resident memory of a new
process over a data dir with 1,000 parked workers. Targets (issue 2): pickup p99
<= 5 ms at 1,000 parked; >= 5,000 routed msg/s; restart <= 2 s and <= 200 MB.
Each measure takes `url`: a PostgreSQL database to run on instead of SQLite
(tests/bench/bench_postgres.py runs them on both).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.store.core import ParkedState, QuestionRow, Store, WorkerRow  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app  # noqa: E402


def database_env(url: str | None) -> dict[str, str]:
    """The settings that put the store in PostgreSQL at `url` (None: SQLite)."""
    return {} if url is None else {"SWITCHBOARD_DATABASE_URL": url}


def seed_parked(data_dir: Path, n: int, url: str | None = None) -> None:
    """n workers parked on an open question each, as a crash would leave them."""
    store = Store(url or data_dir / "switchboard.db")
    now = time.time()
    with store.tx():
        for i in range(n):
            wid = f"w{i}"
            tool_id = f"toolu_{i}"
            store.agents.upsert_worker(
                WorkerRow(
                    id=wid,
                    name=f"W{i}",
                    task="wait for an answer",
                    status="parked",
                    origin_conversation=f"conv-{i}",
                    origin_target="terminal",
                    turns=1,
                    parked=ParkedState(
                        question_id=f"q{i}",
                        tool_use_id=tool_id,
                        results=[
                            {"type": "tool_result", "tool_use_id": tool_id, "content": "(waiting)"}
                        ],
                    ),
                    created_at=now,
                    updated_at=now,
                )
            )
            store.agents.save_conversation(
                wid,
                "task",
                [
                    {"role": "user", "content": [{"type": "text", "text": "Your task: wait"}]},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": tool_id,
                                "name": "ask_human",
                                "input": {"question": "?"},
                            }
                        ],
                    },
                ],
                "terminal",
            )
            store.agents.add_question(
                QuestionRow(
                    id=f"q{i}",
                    worker=wid,
                    question="?",
                    target="terminal",
                    conversation=f"conv-{i}",
                    refs=[],
                    status="open",
                    asked_at=now,
                )
            )
    store.close()


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


class FastFake:
    """tests/bench/fast_fake.py in its own process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("fast_fake.py"))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def env(self) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}", "ANTHROPIC_API_KEY": "b"}

    def arrivals(self) -> list[float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/arrivals") as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


async def pickup(
    parked: int,
    samples: int = 300,
    url: str | None = None,
    prepare: Callable[[Path], object] | None = None,
) -> tuple[float, float]:
    """p50, p99 ms; `prepare(data_dir)` runs on the seeded store before the app starts
    (tests/bench/bench_pickup_journal.py fills the journal there)."""
    fake = FastFake()
    data_dir = Path(tempfile.mkdtemp())
    seed_parked(data_dir, parked, url)
    if prepare is not None:
        prepare(data_dir)
    settings = make_settings(data_dir, fake, **database_env(url))  # type: ignore[arg-type]
    rec = Recorder()
    accepted = []
    async with running_app(settings, [rec]) as app:
        await app.llm.warm()  # steady state: the SDK's import (a thread at start) is done
        for i in range(samples):
            accepted.append(time.monotonic())
            app.human.accept(inbound(f"ping {i}", conversation=f"idle-{i}"))
            await rec.wait_count(i + 1)  # one at a time: each finds the coordinator idle
    arrivals = fake.arrivals()
    fake.stop()
    ms = [(a - t) * 1000 for a, t in zip(arrivals, accepted, strict=True)][20:]  # warm-up
    return statistics.median(ms), pct(ms, 99)


async def routing(n: int = 20000, parked: int = 0, url: str | None = None) -> float:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    data_dir = Path(tempfile.mkdtemp())
    seed_parked(data_dir, parked, url)
    room = {"SWITCHBOARD_MAX_WORKERS": str(parked + 8)}  # parked workers count as active
    settings = make_settings(data_dir, fake, **room, **database_env(url))
    async with running_app(settings, [Recorder()]) as app:
        await app.llm.warm()
        app.team.spawn("Parker", "sit", "x", "terminal")  # a worker to route to
        # from Parker's own conversation: from any other, `@Parker` is refused (its audit
        # line and notice are another path, not routing)
        t0 = time.perf_counter()
        for i in range(n):
            app.human.accept(inbound(f"@parker note {i}", conversation="x"))
        elapsed = time.perf_counter() - t0
        await app.team.stop("Parker")
    fake.stop()
    return n / elapsed


def restart(parked: int = 1000, url: str | None = None) -> tuple[float, float]:
    fake = FakeAnthropic().start()
    data_dir = Path(tempfile.mkdtemp())
    seed_parked(data_dir, parked, url)
    env = fake.env() | database_env(url)
    code = (
        "import asyncio, json, resource, time, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "t0 = time.perf_counter()\n"
        "from tests.kits.app_kit import make_settings\n"
        "from bot.app import App\n"
        "from pathlib import Path\n"
        "async def main():\n"
        f"    s = make_settings(Path({str(data_dir)!r}), FAKE)\n"
        "    app = App(s, [])\n"
        "    await app.start()\n"
        "    await asyncio.sleep(0)\n"
        "    ready = time.perf_counter() - t0\n"
        "    assert len(app.team.workers) == PARKED, len(app.team.workers)\n"
        "    rss = int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20\n"
        "    print(json.dumps({'ready': ready, 'rss': rss}))\n"
        "    await app.stop()\n"
        "asyncio.run(main())\n"
    )
    code = code.replace("FAKE", f"type('F', (), {{'env': lambda self: {env!r}}})()")
    code = code.replace("PARKED", str(parked))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    fake.stop()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["ready"], result["rss"]


def main() -> None:
    print("pickup latency (accepted -> LLM request at the fake), 280 samples each")
    for parked in (0, 100, 1000):
        p50, p99 = asyncio.run(pickup(parked))
        print(
            f"  {parked:>5} parked workers: p50 {p50:6.2f} ms   p99 {p99:6.2f} ms"
            f"   (target p99 <= 5 ms at 1,000)"
        )
    rate = asyncio.run(routing())
    print(f"routed messages/s with journaling: {rate:,.0f}   (target >= 5,000)")
    ready, rss = restart()
    print(
        f"restart with 1,000 parked workers: {ready:.2f} s to ready (process start included),"
        f" {rss:.0f} MB resident   (targets <= 2 s, <= 200 MB)"
    )


if __name__ == "__main__":
    main()
