"""Operator benchmark: `/metrics` scrape time and dashboard render time over a data dir
with 1,000 workers and 100,000 events, and the cost of metrics on the hot path.

    .venv/bin/python tests/bench/bench_ops.py [--dashboard]

Prints p50/p95 of a `/metrics` scrape and of each dashboard page (each timed at the
client, over HTTP on 127.0.0.1): the overview, the conversations list of 2,000
conversations and its search (`?q=`: a person, words of a first line, nothing found),
the events filtered by type and by agent (a scan of the newest 10,000 events), and a
transcript; the first search after start (the index built) apart (`--dashboard`: these
only). Then the time of a
dashboard token check for a
right token and for wrong ones (hmac.compare_digest: no early exit), and routed
messages per second with the metrics subscriber on and off, alternating in one run.
Targets (issues 12, 32): scrape p95 <= 20 ms; every page's p95 <= 100 ms, search
included; routing with metrics >= 95% of without.
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
from bot.core.clock import now_line  # noqa: E402
from bot.core.events import EventLog  # noqa: E402
from bot.ops.auth import Access  # noqa: E402
from bot.store.core import QuestionRow, Store, WorkerRow  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app  # noqa: E402
from tests.kits.dashboard_kit import said  # noqa: E402

WORKERS = 1000
EVENTS = 100_000
CONVERSATIONS = 2000
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
            store.agents.upsert_worker(
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
                store.agents.add_question(
                    QuestionRow(
                        f"q{i}", f"w{i}", "Which one?", "terminal", f"conv-{i}", [], "open", now - i
                    )
                )
        for i in range(CONVERSATIONS):
            store.agents.save_conversation(*conversation(i), f"slack:C{i % 40}/{1000 + i}.1")
    store.close()
    events = EventLog(data_dir / "events.jsonl")
    for i in range(EVENTS):
        if i % 10 == 0:  # a worker's tool call among the messages
            events.emit("tool.called", f"w{i % WORKERS}", tool="remember", ms=9.3, ok=True)
            continue
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


PEOPLE = ("Ann", "Bob", "Carol", "Dmitri", "Eve", "Farah", "Gus", "Hana")


def conversation(i: int) -> tuple[str, str, list[dict[str, object]]]:
    """A coordinator's conversation as stored: marked up as the model reads it."""
    who = PEOPLE[i % len(PEOPLE)]
    asked = said(who, "slack", f"please look into invoice {i} for the {i % 12 + 1}th month")
    messages: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": now_line("UTC")},
                                     {"type": "text", "text": asked}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"On it, {who}."}]},
    ] * 3  # fmt: skip
    return "coordinator", f"slack:C{i % 40}/{1000 + i}.1", messages


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


DASHBOARD = {
    "overview /": "/",
    "conversations": "/conversations",
    "search a person": "/conversations?q=farah",
    "search first-line words": "/conversations?q=invoice+1234",
    "search, nothing found": "/conversations?q=no-such-thing",
    "events ?type=tool (scan)": "/events?type=tool",
    "events ?agent=w5 (scan)": "/events?agent=w5",
    "events ?type=message": "/events?type=message",
    "transcript": "/conversation?agent=coordinator&key=slack:C3/1003.1",
}


async def first_search(url: str) -> float:
    """The first search after start: every conversation summarised once (ms)."""
    t0 = time.perf_counter()
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        await response.read()
        assert response.status == 200
    return (time.perf_counter() - t0) * 1000


async def scrape_and_render(
    fake: FakeAnthropic,
) -> tuple[list[float], dict[str, list[float]], float, int]:
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
        first = await first_search(base + "/conversations?q=ann")
        pages = {name: await timed_gets(base + path, PAGES) for name, path in DASHBOARD.items()}
        size = (data_dir / "events.jsonl").stat().st_size
    return scrape, pages, first, size


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
        scrape, pages, first, size = await scrape_and_render(fake)
        print(
            f"data dir: {WORKERS} workers, {EVENTS} events ({size / 1e6:.1f} MB events.jsonl), "
            f"{CONVERSATIONS} conversations"
        )
        print(
            f"/metrics scrape: p50 {statistics.median(scrape):.2f} ms, "
            f"p95 {pct(scrape, 95):.2f} ms (target p95 <= 20 ms)"
        )
        print(f"dashboard, first search after start (index built): {first:.0f} ms")
        for name, ms in pages.items():
            print(
                f"dashboard {name}: p50 {statistics.median(ms):.2f} ms, "
                f"p95 {pct(ms, 95):.2f} ms (target p95 <= 100 ms)"
            )
        if "--dashboard" in sys.argv:  # the pages only
            return
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
