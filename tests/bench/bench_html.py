"""HTML benchmark (not collected by pytest): run `python tests/bench/bench_html.py`.

The app runs Slack (Socket Mode, the fake Slack) and email (a private dovecot) at
once, as `switchboard run` would. One Slack mention every 50 ms, each in its own
thread; the time from the post to the bot's reply in the fake Slack is its latency.
First with nothing else going on, then while mails each carrying only a 200 KB page
of nested lists (HTML) arrive and are parsed and converted (on until every mail
reached the model). The mentions are posted and timed from a thread of their own,
so a blocked event loop shows. Also: the bounded converter alone on that page.
Target (issue 17): mention latency p99 <= 1 s while the mails are processed.

    .venv/bin/python tests/bench/bench_html.py [--mails 5] [--mentions 40]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.app import App
from bot.core.html_text import html_to_text
from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay, make_ca
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.app_kit import make_settings


def nested_lists(size: int = 200_000) -> str:
    depth = size // 19
    return "<html><body>" + "<ul><li>x" * depth + "</li></ul>" * depth + "</body></html>"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def mentions(slack: FakeSlack, n: int, first: int, until: threading.Event) -> list[float]:
    """In a thread of its own (the bot's event loop cannot slow the clock): a mention
    every 50 ms, at least `n` and on until `until` is set; each one's seconds from post
    to the bot's reply in the fake Slack."""
    posted: dict[int, float] = {}
    answered: dict[int, float] = {}
    seen, i, next_post = 0, first, time.monotonic()
    while len(answered) < len(posted) or i < first + n or not until.is_set():
        now = time.monotonic()
        if now >= next_post and (i < first + n or not until.is_set()):
            posted[i] = now
            slack.post(f"<@{BOT_USER}> ping {i}", channel=f"C{i % 7}")
            i, next_post = i + 1, now + 0.05
        for post in slack.posts[seen:]:
            found = re.search(r"ping (\d+)", str(post.get("text")))
            if found and int(found.group(1)) in posted:
                answered.setdefault(int(found.group(1)), time.monotonic())
        seen = len(slack.posts)
        if now - max(posted.values(), default=now) > 300:
            break  # a reply that never comes: the rest count as 300 s
        time.sleep(0.002)
    return [answered.get(k, v + 300) - v for k, v in posted.items()]


def report(label: str, latencies: list[float]) -> None:
    p50, p99 = pct(latencies, 0.5), pct(latencies, 0.99)
    print(
        f"  {label:<34} p50 {p50 * 1000:6.0f} ms   p99 {p99 * 1000:6.0f} ms   "
        f"max {max(latencies) * 1000:6.0f} ms   ({len(latencies)} mentions)"
    )


async def run(mails: int, n: int, tmp: Path) -> None:
    page = nested_lists()
    start = time.perf_counter()
    html_to_text(page)
    print(f"bounded converter on the 200 KB nested-list page: {time.perf_counter() - start:.3f} s")
    dovecot = Dovecot(*make_ca())
    dovecot.start()
    try:
        relay = await SmtpRelay(RelayHandler(dovecot)).start()
        with FakeAnthropic() as fake, FakeSlack() as slack:
            fake.responder = lambda call: [text(f"re: {call.last_text[-40:]}")]
            ann = Person("ann@localhost", dovecot, relay.port)
            env = dovecot.env("bot@localhost", relay.port, ann.address)
            settings = make_settings(tmp / "data", fake, **slack.env("socket"), **env,
                                     SLACK_PACE_SECONDS="0")  # fmt: skip
            app = App(settings, ["slack", "email"])
            await app.start()
            try:
                await asyncio.sleep(1.0)  # both channels connected
                quiet_done = threading.Event()
                quiet_done.set()
                quiet = await asyncio.to_thread(mentions, slack, n, 0, quiet_done)
                done = threading.Event()
                busy_task = asyncio.create_task(asyncio.to_thread(mentions, slack, n, n, done))
                sent = []
                for k in range(mails):
                    mail = ann.compose("bot@localhost", f"page {k}", "")
                    mail.add_alternative(nested_lists(), subtype="html")
                    sent.append(time.monotonic())
                    await ann.send(mail)
                await fake.until(lambda calls: sum("[Subject: page" in c.last_text for c in calls)
                                 == mails, timeout=300)  # fmt: skip
                done.set()
                busy = await busy_task
                took = [
                    next(c.at for c in fake.calls if f"[Subject: page {k}]" in c.last_text) - at
                    for k, at in enumerate(sent)
                ]
            finally:
                await app.stop()
        await relay.stop()
    finally:
        dovecot.cleanup()
    print(f"Slack mention -> reply latency (a mention every 50 ms, {mails} mails of 200 KB):")
    report("nothing else going on", quiet)
    report("while the nested-list mails arrive", busy)
    print(
        f"  each nested-list mail reached the model (delivery, IDLE, fetch, parse, convert) "
        f"after p50 {pct(took, 0.5):.2f} s, max {max(took):.2f} s"
    )
    print(f"  target p99 <= 1000 ms: {'met' if pct(busy, 0.99) <= 1.0 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, default=5)
    parser.add_argument("--mentions", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(args.mails, args.mentions, Path(tmp)))


if __name__ == "__main__":
    main()
