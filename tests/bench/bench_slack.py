"""Benchmark: a burst of 1,000 Slack mentions over Socket Mode (issue 4's targets).

Each mention is a new thread and arrives twice, as Slack sends it (`app_mention` +
`message`): 2,000 envelopes. Prints the ack latency the fake Slack measured
(envelope sent -> ack received, on its own loop and thread), and the time from the
first envelope until every one of the 1,000 LLM requests reached the fake Anthropic
API, which answers at once. Targets: ack p99 <= 50 ms; all 1,000 within 5 s.

    .venv/bin/python tests/bench/bench_slack.py [--events 1000] [--rate 0] [--llm-calls 8]

`--rate` spreads the burst over time (events per second; 0 = all at once).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, TEAM, FakeSlack
from tests.kit import make_settings
from tests.slack_kit import slack_app

CHANNELS = 10


def mention(slack: FakeSlack, i: int) -> list[dict[str, Any]]:
    ts = slack.next_ts()
    base = {"channel": f"C{i % CHANNELS:03d}", "user": f"U{i % 50:03d}", "ts": ts}
    base.update(text=f"<@{BOT_USER}> question number {i}", event_ts=ts, team=TEAM)
    return [{**base, "type": "app_mention"}, {**base, "type": "message", "channel_type": "channel"}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def burst(slack: FakeSlack, events: list[dict[str, Any]], rate: float) -> None:
    if rate <= 0:
        await asyncio.to_thread(slack.send_many, events)
        return
    per_tick = max(1, int(rate / 100))  # 10 ms ticks
    for start in range(0, len(events), per_tick * 2):
        await asyncio.to_thread(slack.send_many, events[start : start + per_tick * 2])
        await asyncio.sleep(0.01)


async def run(n: int, rate: float, llm_calls: int) -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    slack = FakeSlack().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = make_settings(
                Path(tmp) / "data", fake, **slack.env(), SWITCHBOARD_MAX_LLM_CALLS=str(llm_calls)
            )
            async with slack_app(settings):
                events = [e for i in range(n) for e in mention(slack, i)]
                started = time.monotonic()
                await burst(slack, events, rate)
                await fake.until(lambda calls: len(calls) >= n, timeout=120)
                all_in = time.monotonic() - started
                await slack.until(lambda s: len(s.envelopes) >= 2 * n and not s.unacked(), 60)
            acks = [
                (e.acked_at - e.sent_at) * 1000
                for e in slack.envelopes.values()
                if e.acked_at is not None and e.sent_at is not None
            ][: 2 * n]
    finally:
        slack.stop()
        fake.stop()
    shape = "all at once" if rate <= 0 else f"{rate:g} events/s"
    print(f"Slack Socket Mode burst: {n} mentions ({len(acks)} envelopes), {shape}, ", end="")
    print(f"SWITCHBOARD_MAX_LLM_CALLS={llm_calls}")
    print(
        f"  ack latency  p50 {statistics.median(acks):7.1f} ms"
        f"   p99 {percentile(acks, 0.99):7.1f} ms"
        f"   max {max(acks):7.1f} ms   (target p99 <= 50 ms)"
    )
    print(f"  all {n} LLM requests reached the model after {all_in:6.2f} s   (target <= 5 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--llm-calls", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(run(args.events, args.rate, args.llm_calls))


if __name__ == "__main__":
    main()
