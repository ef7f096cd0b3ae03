"""Operator benchmark for issue 21: the HTTP API and the dashboard with charts.

    .venv/bin/python tests/bench/bench_api.py

1. API message -> coordinator request: the time from the start of `POST
   /api/messages` to the moment the (fake) model receives the coordinator's request,
   i.e. everything Switchboard adds before the model's own time (auth, JSON, journal,
   routing, the coordinator's turn set-up). p50/p99 over sequential messages, each a
   new conversation. Target p99 <= 20 ms.
2. The dashboard's overview with its charts, over a data dir with 1,000 workers,
   100,000 events, 100,000 model calls and 100,000 messages in the last day. p50/p95
   timed at the client. Target p95 <= 100 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.core.messages import (  # noqa: E402
    Inbound,
    Sender,
    Target,
)
from bot.store.core import Store  # noqa: E402
from bot.store.usage import UsageRow  # noqa: E402
from tests.bench.bench_ops import free_port, pct, seed, timed_gets  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, make_settings, running_app  # noqa: E402

API_MESSAGES = 300
PAGES = 200
CALLS = 100_000
MESSAGES = 100_000
TOKEN = "bench:" + "b" * 32


def seed_charts(data_dir: Path) -> None:
    """100,000 model calls and 100,000 people's messages spread over the last day."""
    store = Store(data_dir / "switchboard.db")
    now = time.time()
    with store.tx():
        for i in range(CALLS):
            at = now - (i % 86_000)
            store.usage.record(
                UsageRow(at, "coordinator", "coordinator", f"c{i % 500}", "claude-sonnet-5",
                         "ok", 1200, 300, 0, 0, 0.0081, 1.4)
            )  # fmt: skip
        for i in range(MESSAGES):
            channel = ("slack", "discord", "email", "api")[i % 4]
            msg = Inbound(channel, f"m{i}", f"c{i % 500}", Sender("U1", "Ann"), "hello",
                          Target("terminal"), received_at=now - (i % 86_000))  # fmt: skip
            store.journal(msg, status="routed")
    store.close()


async def api_latency(fake: FakeAnthropic) -> list[float]:
    port = free_port()
    env = {"SWITCHBOARD_HTTP_PORT": str(port), "SWITCHBOARD_API_TOKEN": TOKEN}
    settings = make_settings(Path(tempfile.mkdtemp()), fake, **env)
    headers = {"Authorization": f"Bearer {TOKEN.partition(':')[2]}"}
    ms: list[float] = []
    async with running_app(settings, [Recorder()]), aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{port}/api/messages"
        for i in range(API_MESSAGES):
            before = len(fake.calls)
            t0 = time.monotonic()
            async with session.post(url, json={"text": f"deploy {i} done"}, headers=headers) as r:
                assert r.status == 202, await r.text()
            while len(fake.calls) == before:  # noqa: ASYNC110 (the fake runs in a thread)
                await asyncio.sleep(0.0005)
            ms.append((fake.calls[before].at - t0) * 1000)
    return ms[20:]  # warm-up


async def dashboard(fake: FakeAnthropic) -> list[float]:
    data_dir = Path(tempfile.mkdtemp())
    seed(data_dir)
    seed_charts(data_dir)
    port = free_port()
    settings = make_settings(data_dir, fake, SWITCHBOARD_HTTP_PORT=str(port))
    async with running_app(settings, [Recorder()]):
        page = await timed_gets(f"http://127.0.0.1:{port}/", PAGES)
    return page


async def main() -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    try:
        api = await api_latency(fake)
        print(
            f"API message -> coordinator request ({len(api)} messages): "
            f"p50 {statistics.median(api):.2f} ms, p99 {pct(api, 99):.2f} ms "
            "(target p99 <= 20 ms)"
        )
        page = await dashboard(fake)
        print(
            f"dashboard / with charts (1,000 workers, 100,000 events, {CALLS:,} calls, "
            f"{MESSAGES:,} messages): p50 {statistics.median(page):.2f} ms, "
            f"p95 {pct(page, 95):.2f} ms (target p95 <= 100 ms)"
        )
    finally:
        fake.stop()


if __name__ == "__main__":
    asyncio.run(main())
