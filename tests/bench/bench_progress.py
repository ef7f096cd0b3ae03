"""Benchmark: live progress on Slack under a steady stream of mentions (issue 19).

Mentions arrive at `--rate` per second, each in its own thread; the model answers
each after `--think` seconds, streaming its text in pieces. The fakes (Slack and
Anthropic) run in a child process, as remote servers would, and time both ends:

- mention -> first progress call: the event sent by the fake Slack until the status
  line (`assistant.threads.setStatus`) for its thread reaches it (target p99 <= 1 s);
- first streamed token -> first visible text: the model's first text delta written by
  the fake Anthropic until `chat.startStream` (or the fallback's `chat.postMessage`)
  for that answer reaches the fake Slack (target p99 <= 300 ms);
- Slack API calls per answer, by method (a non-streamed answer costs one postMessage).

    .venv/bin/python tests/bench/bench_progress.py [--mentions 100] [--rate 20] [--think 0.5]
        [--pace 0.02]   (seconds between the model's text deltas of 24 characters)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_slack import FakeEnv, percentile, remote
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text
from tests.fakes.slack_api import BOT_USER, TEAM, FakeSlack
from tests.kits.app_kit import make_settings
from tests.kits.slack_kit import slack_app

ANSWER = "the deploy is fine; every check passed and the canary held. " * 4
NUMBER = re.compile(r"question (\d+)")
SETUP = {"auth.test", "apps.connections.open", "conversations.history", "conversations.replies"}


def answer(think: float, pace: float) -> Any:
    def respond(call: Call) -> Reply:
        number = NUMBER.search(call.last_text)
        said = f"A{number.group(1) if number else '?'}: {ANSWER}"
        return Reply([text(said)], delay=think, pace=pace, piece=24)

    return respond


def mention(slack: FakeSlack, i: int) -> dict[str, Any]:
    ts = slack.next_ts()
    return {
        "type": "app_mention",
        "channel": f"C{i % 10:03d}",
        "user": f"U{i % 50:03d}",
        "ts": ts,
        "event_ts": ts,
        "team": TEAM,
        "text": f"<@{BOT_USER}> question {i}",
    }


def fakes(conn: Connection) -> None:
    """The child process: both fakes, driven over a pipe."""
    command: Any = None
    fake = FakeAnthropic().start()
    slack = FakeSlack().start()
    conn.send({**fake.env(), **slack.env()})
    while (command := conn.recv()) != "stop":
        name, arg = command
        if name == "respond":
            fake.responder = answer(*arg)
        elif name == "reset":
            slack.calls.clear()
            slack.posts.clear()
            slack.streams.clear()
            fake.calls.clear()
        elif name == "mentions":
            n, rate = arg
            conn.send(mentions(slack, n, rate))
        elif name == "measure":
            slack.wait_for(lambda s, n=arg: finished(s) >= n, 120)
            conn.send(measure(fake, slack, arg))
    slack.stop()
    fake.stop()


def mentions(slack: FakeSlack, n: int, rate: float) -> dict[str, float]:
    """Send `n` mentions at `rate` per second: thread ts -> when it was sent."""
    sent: dict[str, float] = {}
    start = time.monotonic()
    for i in range(n):
        if (wait := start + i / rate - time.monotonic()) > 0:
            time.sleep(wait)
        event = mention(slack, i)
        sent[event["ts"]] = time.monotonic()
        slack.send_event(event)
    return sent


def finished(slack: FakeSlack) -> int:
    return sum(1 for m in slack.messages if m.get("metadata"))


def measure(fake: FakeAnthropic, slack: FakeSlack, n: int) -> dict[str, Any]:
    status = {}
    for c in slack.calls:
        if c.method == "assistant.threads.setStatus":
            status.setdefault(str(c.params["thread_ts"]), c.at)
    first_text = {}
    for call in fake.calls:
        number = NUMBER.search(call.last_text)
        if number and call.first_text_at is not None:
            first_text.setdefault(f"A{number.group(1)}:", call.first_text_at)
    visible = {}
    for c in slack.calls:
        if c.method in ("chat.startStream", "chat.postMessage"):
            said = str(c.params.get("markdown_text") or c.params.get("text") or "")
            if (tag := re.search(r"A\d+:", said)) is not None:
                visible.setdefault(tag.group(0), c.at)
    shown = [visible[tag] - first_text[tag] for tag in visible if tag in first_text]
    methods = Counter(c.method for c in slack.calls if c.method not in SETUP)
    return {"status": status, "shown": shown, "methods": dict(methods), "answers": n}


async def run(n: int, rate: float, think: float, pace: float) -> None:
    async with remote(fakes) as (conn, env):
        with tempfile.TemporaryDirectory() as tmp:
            settings = make_settings(
                Path(tmp) / "data",
                FakeEnv(env),
                **env,
                SWITCHBOARD_STREAMING="on",
                SLACK_PACE_SECONDS="0.02",
                SWITCHBOARD_MAX_LLM_CALLS="64",
            )
            async with slack_app(settings):
                conn.send(("respond", (think, pace)))
                conn.send(("mentions", (1, rate)))  # warm-up: the SDK's stream types load
                await asyncio.to_thread(conn.recv)
                conn.send(("measure", 1))
                await asyncio.to_thread(conn.recv)
                conn.send(("reset", None))
                conn.send(("mentions", (n, rate)))
                sent = await asyncio.to_thread(conn.recv)
                conn.send(("measure", n))
                result = await asyncio.to_thread(conn.recv)
    report(n, rate, think, pace, sent, result)


def report(
    n: int, rate: float, think: float, pace: float, sent: dict[str, float], result: Any
) -> None:
    status = [
        (result["status"][ts] - at) * 1000 for ts, at in sent.items() if ts in result["status"]
    ]
    shown = [s * 1000 for s in result["shown"]]
    writing = len(ANSWER) / 24 * pace
    print(
        f"Slack live progress: {n} mentions at {rate:g}/s, the model thinking {think:g} s, "
        f"then writing for {writing:.1f} s"
    )
    line(f"mention -> status line ({len(status)}/{n})", status, "target p99 <= 1000 ms")
    line(f"first token -> visible text ({len(shown)}/{n})", shown, "target p99 <= 300 ms")
    print("  Slack API calls per answer:")
    for method, count in sorted(result["methods"].items()):
        print(f"    {method:32s} {count / n:5.2f}")
    extra = sum(result["methods"].values()) / n - 1
    print(f"  extra Slack API calls per answer (beyond the one post): {extra:.2f}")


def line(label: str, values: list[float], target: str) -> None:
    if not values:
        print(f"  {label}: no samples")
        return
    print(
        f"  {label:40s} p50 {statistics.median(values):7.1f} ms"
        f"   p99 {percentile(values, 0.99):7.1f} ms   ({target})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=100)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--think", type=float, default=0.5)
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between deltas")
    args = parser.parse_args()
    asyncio.run(run(args.mentions, args.rate, args.think, args.pace))


if __name__ == "__main__":
    main()
