"""Benchmark: a burst of 1,000 Discord MESSAGE_CREATE events, one per thread.

`switchboard run` as a real process, with the real discord.py, against the fake
Discord gateway and the fake Anthropic API (answering at once), both in this
process, so the bot does not share its interpreter with the fakes. Printed against
the issue's targets:
- journal ("ack") latency of each message: from the moment the fake sent its
  MESSAGE_CREATE to the `message.received` event that `HumanNode.accept` writes once
  the message is journaled (p50/p99/max). Discord has no per-event ack: journaling is
  the point after which a message cannot be lost, so it plays the ack's part;
- the time from the start of the burst until every message's LLM request reached
  the fake, and until every reply was posted.
Two bursts: all 1,000 back to back (~30 ms on the wire), and spread over one second.

    .venv/bin/python tests/bench/bench_discord.py [--events 1000] [--llm-calls 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes import discord_payloads as dp  # noqa: E402
from tests.fakes.anthropic_api import Call, FakeAnthropic, text  # noqa: E402
from tests.fakes.discord_api import FakeDiscord  # noqa: E402
from tests.kits.proc import Switchboard  # noqa: E402

ACK_P99_TARGET = 0.050
ALL_REACH_TARGET = 5.0


def answer_at_once(call: Call) -> list[dict]:
    return [text("noted")]


def burst(discord: FakeDiscord, threads: list[str], label: str, spread: float) -> list[str]:
    messages = [(f"<@{dp.BOT_ID}> {label} question {i}", tid) for i, tid in enumerate(threads)]
    if spread <= 0:
        return discord.burst(messages)
    ids: list[str] = []
    step = 20  # messages per slice
    for start in range(0, len(messages), step):
        ids += discord.burst(messages[start : start + step])
        time.sleep(spread * step / len(messages))
    return ids


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    discord: FakeDiscord,
    anthropic: FakeAnthropic,
    threads: list[str],
    data: Path,
    spread: float,
    pid: int,
) -> None:
    label = f"spread{spread}"
    cpu_bot, cpu_fakes = cpu_seconds(pid), cpu_seconds(os.getpid())
    calls_before, posts_before = len(anthropic.calls), len(discord.posts)
    start_wall, start = time.time(), time.monotonic()
    ids = burst(discord, threads, label, spread)
    n = len(ids)
    anthropic.wait_for(lambda calls: len(calls) >= calls_before + n, timeout=300)
    reached = max(c.at for c in anthropic.calls[calls_before:]) - start
    discord.wait_for(lambda posts: len(posts) >= posts_before + n, timeout=300)
    replied = max(p.at for p in discord.posts[posts_before:]) - start
    cpu_bot, cpu_fakes = cpu_seconds(pid) - cpu_bot, cpu_seconds(os.getpid()) - cpu_fakes
    journaled = _journal_times(data / "events.jsonl", set(ids))
    lat = sorted(journaled[i] - discord.sent_at[i] for i in ids)
    p50, p99 = statistics.median(lat), lat[int(len(lat) * 0.99) - 1]
    sent = max(discord.sent_at[i] for i in ids) - start_wall
    print(f"Discord burst of {n} MESSAGE_CREATE in {n} threads, sent over {sent:.3f} s:")
    print(
        f"  journal (ack) latency p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, "
        f"max {lat[-1] * 1e3:.1f} ms (target p99 <= {ACK_P99_TARGET * 1e3:.0f} ms: "
        f"{'met' if p99 <= ACK_P99_TARGET else 'missed'})"
    )
    print(
        f"  every LLM request reached the fake after {reached:.2f} s (target <= "
        f"{ALL_REACH_TARGET:.0f} s: {'met' if reached <= ALL_REACH_TARGET else 'missed'}); "
        f"every reply posted after {replied:.2f} s"
    )
    print(f"  CPU used: bot {cpu_bot:.2f} s, the two fakes {cpu_fakes:.2f} s (2 cores)")


def _journal_times(path: Path, ids: set[str]) -> dict[str, float]:
    times: dict[str, float] = {}
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "message.received" and event["data"]["id"] in ids:
            times[event["data"]["id"]] = event["ts"]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--llm-calls", type=int, default=8)
    args = parser.parse_args()
    anthropic = FakeAnthropic(answer_at_once).start()
    discord = FakeDiscord().start()
    threads = discord.add_threads(args.events)
    with tempfile.TemporaryDirectory(prefix="bench-discord-") as tmp:
        data = Path(tmp) / "data"
        env = {
            **anthropic.env(),
            **discord.env(),
            "SWITCHBOARD_MAX_LLM_CALLS": str(args.llm_calls),
        }
        bot = Switchboard(["--data-dir", str(data), "run"], env, Path(tmp))
        try:
            discord.gateway.wait_identified(30)
            time.sleep(1.0)  # the guild and its threads are cached
            print(f"SWITCHBOARD_MAX_LLM_CALLS={args.llm_calls}, bot in its own process")
            measure(discord, anthropic, threads, data, 0.0, bot.proc.pid)
            measure(discord, anthropic, threads, data, 1.0, bot.proc.pid)
        finally:
            bot.proc.terminate()
            bot.proc.wait(30)
            discord.stop()
            anthropic.stop()


if __name__ == "__main__":
    main()
