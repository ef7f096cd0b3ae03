"""Operator benchmark: `/metrics` scrape time and dashboard render time over a data dir
with 1,000 workers and 100,000 events, and the cost of metrics on the hot path.

    .venv/bin/python tests/bench/bench_ops.py

Prints p50/p95 of a `/metrics` scrape and of the dashboard's overview page (each timed
at the client, over HTTP on 127.0.0.1), the time of a dashboard token check for a
right token and for wrong ones (hmac.compare_digest: no early exit), and routed
messages per second with the metrics subscriber on and off, alternating in one run.
Targets (issue 12): scrape p95 <= 20 ms; page p95 <= 100 ms; routing with metrics
>= 95% of without.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.app import App  # noqa: E402
from bot.core.events import EventLog  # noqa: E402
from bot.ops.auth import Access  # noqa: E402
from bot.store.core import QuestionRow, Store, WorkerRow  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app  # noqa: E402

WORKERS = 1000
EVENTS = 100_000
SCRAPES = 300
PAGES = 200


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def seed(data_dir: Path) -> None:
    """1,000 workers (a tenth parked on a question, the rest done) and 100,000 events."""
    store = Store(data_dir / "switchboard.db")
    now = time.time()
    with store.tx():
        for i in range(WORKERS):
            parked = i % 10 == 0
            store.upsert_worker(
                WorkerRow(
                    f"w{i}",
                    f"W{i}",
                    f"task number {i}: look into something",
                    "parked" if parked else "done",
                    f"conv-{i}",
                    "terminal",
                    turns=3,
                    created_at=now - i,
                    updated_at=now - i,
                )
            )
            if parked:
                store.add_question(
                    QuestionRow(
                        f"q{i}", f"w{i}", "Which one?", "terminal", f"conv-{i}", [], "open", now - i
                    )
                )
    store.close()
    events = EventLog(data_dir / "events.jsonl")
    for i in range(EVENTS):
        events.emit(
            "message.received",
            "human",
            channel="slack",
            conversation=f"c{i % 500}",
            sender="U1",
            id=f"m{i}",
            to=["coordinator"],
            error=None,
            question=None,
        )
    events.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def timed_gets(url: str, n: int) -> list[float]:
    ms = []
    async with aiohttp.ClientSession() as session:
        for _ in range(n):
            t0 = time.perf_counter()
            async with session.get(url) as response:
                await response.read()
                assert response.status == 200, response.status
            ms.append((time.perf_counter() - t0) * 1000)
    return ms[10:]  # warm-up


async def scrape_and_render(fake: FakeAnthropic) -> tuple[list[float], list[float], int]:
    data_dir = Path(tempfile.mkdtemp())
    seed(data_dir)
    port = free_port()
    settings = make_settings(data_dir, fake, SWITCHBOARD_HTTP_PORT=str(port))
    recorder = Recorder()
    async with running_app(settings, [recorder]) as app:
        base = f"http://127.0.0.1:{port}"
        for i in range(50):  # some traffic, so the counters have children
            app.human.accept(inbound(f"hello {i}", conversation=f"warm-{i}"))
        await recorder.wait_count(50, timeout=60)  # measured on a quiet app
        await asyncio.sleep(0.5)
        scrape = await timed_gets(base + "/metrics", SCRAPES)
        page = await timed_gets(base + "/", PAGES)
        size = (data_dir / "events.jsonl").stat().st_size
    return scrape, page, size


async def route(app: App, n: int, round_no: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        app.human.accept(inbound(f"@parker note {i}", conversation=f"r{round_no}-{i % 50}"))
    return n / (time.perf_counter() - t0)


async def metrics_cost(fake: FakeAnthropic, rounds: int = 12, n: int = 5000) -> tuple[float, float]:
    settings = make_settings(Path(tempfile.mkdtemp()), fake)
    on: list[float] = []
    off: list[float] = []
    async with running_app(settings, [Recorder()]) as app:
        app.team.spawn("Parker", "sit", "x", "terminal")
        await route(app, n, -1)  # warm-up
        for r in range(rounds):
            metrics_on = r % 2 == 0
            if not metrics_on:
                app.ops.unsubscribe_metrics()
            rate = await route(app, n, r)
            (on if metrics_on else off).append(rate)
            if not metrics_on:
                app.ops.unsubscribe_metrics = app.events.subscribe(app.ops.metrics.observe_event)
        await app.team.stop("Parker")
    return statistics.median(on), statistics.median(off)


def token_timing(rounds: int = 200_000) -> dict[str, float]:
    """ns per token check: right, wrong in the first character, wrong in the last."""
    token = "0123456789abcdef" * 3
    access = Access(token)
    cases = {"right": token, "wrong first": "X" + token[1:], "wrong last": token[:-1] + "X"}
    out = {}
    for name, given in cases.items():
        t0 = time.perf_counter_ns()
        for _ in range(rounds):
            access.token_matches(given)
        out[name] = (time.perf_counter_ns() - t0) / rounds
    return out


async def main() -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    try:
        scrape, page, size = await scrape_and_render(fake)
        print(f"data dir: {WORKERS} workers, {EVENTS} events ({size / 1e6:.1f} MB events.jsonl)")
        print(
            f"/metrics scrape: p50 {statistics.median(scrape):.2f} ms, "
            f"p95 {pct(scrape, 95):.2f} ms (target p95 <= 20 ms)"
        )
        print(
            f"dashboard /: p50 {statistics.median(page):.2f} ms, "
            f"p95 {pct(page, 95):.2f} ms (target p95 <= 100 ms)"
        )
        timing = token_timing()
        print("token check: " + ", ".join(f"{k} {v:.0f} ns" for k, v in timing.items()))
        with_metrics, without = await metrics_cost(fake)
        print(
            f"routing: {with_metrics:,.0f} msg/s with metrics, {without:,.0f} msg/s without "
            f"({with_metrics / without:.1%}; target >= 95%)"
        )
    finally:
        fake.stop()


if __name__ == "__main__":
    asyncio.run(main())
