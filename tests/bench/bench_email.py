"""Email benchmark (not collected by pytest): run `python tests/bench/bench_email.py`.

1. Delivery -> LLM request: a mail is sent over SMTP to the relay, which delivers it
   into dovecot over LMTP before it answers 250; the clock stops when the fake
   Anthropic API receives the coordinator's request (IDLE push, fetch, parse,
   journal, route included). 50 mails, one at a time; p50/p95.
2. Outbound mails/s through the durable outbox: N messages queued at once to
   300 distinct addresses (the outbox delivers targets concurrently, each in order)
   and to one address (strictly in order), timed until every one is marked sent;
   the relay discarding, then delivering each into dovecot.
Targets (issue 3): delivery -> LLM request p95 <= 1.0 s; >= 50 outbound mails/s.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiosmtplib

from bot.app import App
from bot.core.events import Event
from bot.core.messages import Outbound, Target
from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay, make_ca
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import eventually, make_settings

MAILS = 50
OUTBOUND = 300


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def inbound_latency(app: App, fake: FakeAnthropic, ann: Person, bot: str, port: int) -> None:
    latencies = []
    for i in range(MAILS):
        mail = ann.compose(bot, f"bench {i}", f"bench mail {i}")
        await aiosmtplib.send(mail, hostname="127.0.0.1", port=port)
        sent = time.monotonic()
        await fake.until(lambda calls, i=i: any(f"bench mail {i}" in c.last_text for c in calls))
        call = next(c for c in fake.calls if f"bench mail {i}" in c.last_text)
        latencies.append(call.at - sent)
    p50, p95 = pct(latencies, 0.5), pct(latencies, 0.95)
    print(
        f"delivery -> LLM request over {MAILS} mails: p50 {p50 * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        f"(target p95 <= 1000 ms: {'met' if p95 <= 1.0 else 'NOT met'})"
    )


async def outbound_rate(app: App, label: str, targets: int = OUTBOUND) -> None:
    sent: list[float] = []
    done = asyncio.Event()

    def count(event: Event) -> None:
        if event.type == "message.sent":
            sent.append(time.monotonic())
            if len(sent) == OUTBOUND:
                done.set()

    unsubscribe = app.events.subscribe(count)
    start = time.monotonic()
    with app.store.tx():
        for i in range(OUTBOUND):
            target = Target("email", f"reader{i % targets}@localhost")
            app.human.say(Outbound("coordinator", target, f"**update {i}**\n\n- a\n- b"))
    await asyncio.wait_for(done.wait(), 120)
    took = sent[-1] - start
    unsubscribe()
    rate = OUTBOUND / took
    print(
        f"outbound through the outbox ({label}, {targets} addresses): "
        f"{OUTBOUND} mails in {took:.2f} s = "
        f"{rate:.0f} mails/s (target >= 50: {'met' if rate >= 50 else 'NOT met'})"
    )


async def main() -> None:
    dovecot = Dovecot(*make_ca())
    dovecot.start()
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    handler = RelayHandler(dovecot, mx=True)  # the bench's mail reaches the bot through it
    relay = await SmtpRelay(handler).start()
    bot, ann = "bot@localhost", Person("ann@localhost", dovecot, relay.port)
    with tempfile.TemporaryDirectory() as tmp:
        env = dovecot.env(bot, relay.port, "@localhost")
        env["EMAIL_MAX_PER_SENDER_PER_HOUR"] = "100000"
        app = App(make_settings(Path(tmp), fake, **env), ["email"])
        await app.start()
        try:
            await eventually(lambda: ("email", "connected") in [h[:2] for h in app.store.health()])
            await inbound_latency(app, fake, ann, bot, relay.port)
            handler.deliver = False
            await outbound_rate(app, "relay discards")
            await outbound_rate(app, "relay discards", targets=1)
            handler.deliver = True
            await outbound_rate(app, "relay delivers into dovecot by LMTP")
            await outbound_rate(app, "relay delivers into dovecot by LMTP", targets=1)
        finally:
            await app.stop()
            await relay.stop()
            fake.stop()
            dovecot.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
