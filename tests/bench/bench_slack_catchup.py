"""Benchmark: Slack catch-up of 1,000 messages missed across 50 threads (issue 13).

The bot is in 50 threads (it answered a mention in each). It goes down; people write
20 replies in every thread (1,000 messages) and Slack gives up redelivering them. At
the next start the catch-up reads them back with conversations.replies (cursor-paged,
200 a page) and journals each through the intake. Prints the time from the Socket
Mode hello to the `channel.caught_up` event, the API calls it took, and the time until
the last of the 1,000 reached the model. Target: catch-up <= 10 s.

    .venv/bin/python tests/bench/bench_slack_catchup.py [--threads 50] [--per-thread 20]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.app_kit import events, eventually, make_settings
from tests.kits.slack_kit import slack_app


async def main(threads: int, per_thread: int) -> None:
    with FakeSlack() as slack, FakeAnthropic(lambda call: [text("ok")]) as fake:
        data = Path(tempfile.mkdtemp()) / "data"
        env = {**slack.env(), "SLACK_PACE_SECONDS": "0", "SWITCHBOARD_MAX_LLM_CALLS": "16"}
        settings = make_settings(data, fake, **env)
        async with slack_app(settings):
            roots = [slack.post(f"<@{BOT_USER}> topic {i}", channel="C1") for i in range(threads)]
            await slack.until(lambda s: len(s.posts) >= threads, 60)
        for n in range(per_thread):
            for i, root in enumerate(roots):
                slack.remember({"type": "message", "channel": "C1", "user": "UANN",
                                "text": f"missed {i}.{n}", "ts": slack.next_ts(),
                                "thread_ts": root})  # fmt: skip
        slack.expire()
        missed = threads * per_thread
        calls_before = len(slack.calls)
        async with slack_app(settings):
            await slack.until(lambda s: s.connections >= 2, 30)
            hello = time.monotonic()
            await eventually(lambda: len(events(data, "channel.caught_up")) == 2, 120)
            caught = time.monotonic() - hello
            await eventually(lambda: sum("missed" in c.last_text for c in fake.calls) > 0, 60)
            await eventually(lambda: _all_seen(fake, missed), 120)
            answered = time.monotonic() - hello
        reads = [c for c in slack.calls[calls_before:] if c.method.startswith("conversations.")]
        done = events(data, "channel.caught_up")[-1]["data"]
    print(
        f"Slack catch-up: {done['messages']} of {missed} missed messages in {threads} threads "
        f"read back in {caught:.2f} s ({len(reads)} history calls, {done['places']} places); "
        f"all reached the model in {answered:.2f} s "
        f"(target catch-up <= 10 s: {'met' if caught <= 10 else 'NOT met'})"
    )


def _all_seen(fake: FakeAnthropic, missed: int) -> bool:
    seen = set()
    for call in fake.calls:
        for line in call.last_text.splitlines():
            if "missed " in line:
                seen.add(line.split("missed ", 1)[1])
    return len(seen) >= missed


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--per-thread", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.threads, args.per_thread))
