"""Benchmark: files people send (issue 10's targets).

1. Intake throughput: 200 Slack mentions, each with one 100 KB file (distinct bytes),
   sent at once. Measured from the first event until every message is journaled, its
   file downloaded from the fake Slack (with the bot token), hashed, saved and
   recorded, and the message routed. Target: >= 50 files/s.
2. Added latency of a 20 KB text file put inline in the coordinator's request,
   against a plain message, in the same run: the time from the event leaving the fake
   Slack until the request reaches the fake Anthropic API (one message at a time,
   alternating plain / with file). Target: added p95 <= 20 ms.

The fakes (Slack and Anthropic) run in a child process, as remote servers would.

    .venv/bin/python tests/bench/bench_files.py [--files 200] [--size 100000] [--rounds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_slack import FakeEnv, percentile, remote
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.app_kit import make_settings
from tests.kits.slack_kit import slack_app

MENTION = f"<@{BOT_USER}>"


def remote_fakes(conn: Connection) -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    slack = FakeSlack().start()
    conn.send({**fake.env(), **slack.env()})
    while (command := conn.recv()) != "stop":
        name, arg = command
        if name == "files":
            n, size = arg
            files = [
                slack.file(f"data-{i}.bin", os.urandom(size), "application/octet-stream")
                for i in range(n)
            ]
            conn.send(time.monotonic())
            for i, f in enumerate(files):
                slack.post(f"{MENTION} file {i}", channel=f"C{i % 10:03d}", files=[f])
        elif name == "one":
            before = len(fake.calls)
            extra = {"files": [slack.file("notes.txt", arg)]} if arg else {}
            sent = time.monotonic()
            slack.post(f"{MENTION} a question", channel="C900", **extra)
            fake.wait_for(lambda calls, n=before: len(calls) > n, timeout=30)
            conn.send(fake.calls[before].at - sent)
        elif name == "calls":
            fake.wait_for(lambda calls, n=arg: len(calls) >= n, timeout=120)
            conn.send(len(fake.calls))
    slack.stop()
    fake.stop()


async def routed(data_dir: Path, n: int, timeout: float = 120) -> float:
    """When the n-th `message.received` reached the event log (time.monotonic())."""
    log = data_dir / "events.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b'"message.received"') >= n:
            return time.monotonic()
        await asyncio.sleep(0.005)
    raise TimeoutError(f"{n} messages were not routed in {timeout} s")


async def run(n: int, size: int, rounds: int) -> None:
    async with remote(remote_fakes) as (conn, env):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            settings = make_settings(data, FakeEnv(env), **env, SLACK_PACE_SECONDS="0")
            async with slack_app(settings):
                latencies = await _latency(conn, rounds)
                conn.send(("files", (n, size)))
                started = await asyncio.to_thread(conn.recv)
                done = await routed(data, n + 2 * rounds)
                conn.send(("calls", n + 2 * rounds))  # let the model requests finish
                await asyncio.to_thread(conn.recv)
    seconds = done - started
    print(f"File intake: {n} Slack messages with one {size // 1000} KB file each, all at once")
    print(
        f"  all downloaded, hashed, saved, journaled and routed in {seconds:6.2f} s: "
        f"{n / seconds:7.1f} files/s   (target >= 50 files/s)"
    )
    plain, with_file = latencies
    added50 = statistics.median(with_file) - statistics.median(plain)
    added95 = percentile(with_file, 0.95) - percentile(plain, 0.95)
    print(f"Latency to the coordinator's request, {rounds} messages each, same run:")
    for label, values in (("plain message     ", plain), ("with 20 KB text   ", with_file)):
        print(
            f"  {label} p50 {statistics.median(values):6.1f} ms   "
            f"p95 {percentile(values, 0.95):6.1f} ms"
        )
    print(
        f"  added by the file: p50 {added50:+6.1f} ms   p95 {added95:+6.1f} ms"
        "   (target p95 <= 20 ms)"
    )


async def _latency(conn: Connection, rounds: int) -> tuple[list[float], list[float]]:
    body = ("2026-11-23 03:12:01 ERROR db: connection refused (pool exhausted)\n" * 400)[:20_000]
    plain: list[float] = []
    with_file: list[float] = []
    for i in range(2 * rounds):
        conn.send(("one", body.encode() if i % 2 else b""))
        seconds = await asyncio.to_thread(conn.recv)
        (with_file if i % 2 else plain).append(seconds * 1000)
    return plain[2:], with_file[2:]  # the first of each warms the connections up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.files, args.size, args.rounds))


if __name__ == "__main__":
    main()
