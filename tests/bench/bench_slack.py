"""Benchmark: a burst of 1,000 Slack mentions over Socket Mode (issue 4's targets).

Each mention is a new thread and arrives twice, as Slack sends it (`app_mention` +
`message`): 2,000 envelopes. The fakes (Slack and Anthropic) run in a child process,
as remote servers would. Prints the ack latency the fake Slack measured (envelope
sent -> ack received), and the time from the first envelope until every one of the
1,000 LLM requests reached the fake Anthropic API, which answers at once.
Targets: ack p99 <= 50 ms; all 1,000 within 5 s.

    .venv/bin/python tests/bench/bench_slack.py [--events 1000] [--rate 0] [--llm-calls 8]

`--rate` spreads the burst over time (mentions per second; 0 = all at once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, TEAM, FakeSlack
from tests.kits.app_kit import make_settings
from tests.kits.slack_kit import slack_app

CHANNELS = 10


def mention(slack: FakeSlack, i: int) -> list[dict[str, Any]]:
    ts = slack.next_ts()
    base = {"channel": f"C{i % CHANNELS:03d}", "user": f"U{i % 50:03d}", "ts": ts}
    base.update(text=f"<@{BOT_USER}> question number {i}", event_ts=ts, team=TEAM)
    return [{**base, "type": "app_mention"}, {**base, "type": "message", "channel_type": "channel"}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def remote_fakes(conn: Connection) -> None:
    """The child process: both fakes, driven over a pipe, as remote servers would be.

    In the app's process their threads would compete with the app for the GIL and
    the figures would measure the fakes as much as Switchboard.
    """
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    slack = FakeSlack().start()
    conn.send({**fake.env(), **slack.env()})
    while (command := conn.recv()) != "stop":
        name, arg = command
        if name == "burst":
            n, rate = arg
            events = [e for i in range(n) for e in mention(slack, i)]
            interval = 0.0 if rate <= 0 else 1.0 / (2 * rate)
            conn.send(time.monotonic())  # CLOCK_MONOTONIC is shared by processes
            slack.send_many(events, interval)
        elif name == "calls":
            fake.wait_for(lambda calls, n=arg: len(calls) >= n, timeout=120)
            conn.send(max(c.at for c in fake.calls))
        elif name == "acks":
            slack.wait_for(lambda s, n=arg: len(s.envelopes) >= n and not s.unacked(), 60)
            conn.send([(e.acked_at - e.sent_at) * 1000 for e in slack.envelopes.values()][:arg])
    slack.stop()
    fake.stop()


@contextlib.asynccontextmanager
async def remote(
    target: Callable[[Connection], None],
) -> AsyncIterator[tuple[Connection, dict[str, str]]]:
    """`target` (the fakes' loop) in a child process: the pipe to it and the settings
    environment it sent. On leaving: "stop", then the child is joined (killed if stuck)."""
    conn, child_conn = multiprocessing.Pipe()
    child = multiprocessing.Process(target=target, args=(child_conn,), daemon=True)
    child.start()
    try:
        env = await asyncio.to_thread(conn.recv)
        yield conn, env
        conn.send("stop")
        await asyncio.to_thread(child.join, 30)
    finally:
        if child.is_alive():
            child.kill()


async def run(n: int, rate: float, llm_calls: int) -> None:
    async with remote(remote_fakes) as (conn, env):
        with tempfile.TemporaryDirectory() as tmp:
            settings = make_settings(
                Path(tmp) / "data", FakeEnv(env), **env, SWITCHBOARD_MAX_LLM_CALLS=str(llm_calls)
            )
            async with slack_app(settings):
                conn.send(("burst", (n, rate)))
                started = await asyncio.to_thread(conn.recv)
                conn.send(("calls", n))
                all_in = await asyncio.to_thread(conn.recv) - started
                conn.send(("acks", 2 * n))
                acks = await asyncio.to_thread(conn.recv)
    shape = "all at once" if rate <= 0 else f"{rate:g} mentions/s"
    print(f"Slack Socket Mode burst: {n} mentions ({len(acks)} envelopes), {shape}, ", end="")
    print(f"SWITCHBOARD_MAX_LLM_CALLS={llm_calls}")
    print(
        f"  ack latency  p50 {statistics.median(acks):7.1f} ms"
        f"   p99 {percentile(acks, 0.99):7.1f} ms"
        f"   max {max(acks):7.1f} ms   (target p99 <= 50 ms)"
    )
    print(f"  all {n} LLM requests reached the model after {all_in:6.2f} s   (target <= 5 s)")


class FakeEnv:
    """Stands in for the FakeAnthropic `make_settings` reads: only its `env()`."""

    def __init__(self, env: dict[str, str]) -> None:
        self._env = {k: v for k, v in env.items() if k.startswith("ANTHROPIC_")}

    def env(self) -> dict[str, str]:
        return self._env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--llm-calls", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(run(args.events, args.rate, args.llm_calls))


if __name__ == "__main__":
    main()
