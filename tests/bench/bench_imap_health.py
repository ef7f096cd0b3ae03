"""IMAP health benchmark (not collected by pytest): `python tests/bench/bench_imap_health.py`.

1. Push latency with the health checks on: a mail sent over SMTP (the relay delivers
   it into dovecot by LMTP before its 250) at a random moment of the IDLE cycle, until
   the fake Anthropic API receives the coordinator's request. p50/p95/max.
2. The checks' cost on a quiet session: commands the client sends and bytes each way
   per minute of IDLE (the same in polling mode, where IMAP_POLL_SECONDS is 60).
3. Detection: dovecot frozen (SIGSTOP) at a random moment; seconds until the store's
   health (what /healthz reads) says the email channel is not connected, and, once
   thawed, until it is connected again. In IDLE and in polling mode.
Target (ARCHITECTURE "Operator HTTP"): not connected within 15 s, every time.
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiosmtplib

from bot.app import App
from channels.email import EmailChannel
from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay, make_ca
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import eventually, make_settings

MAILS = 20
FREEZES = 4
QUIET_SECONDS = 60.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def state(app: App) -> str:
    return next(s for kind, s, _d, _t in app.store.health() if kind == "email")


def channel(app: App) -> EmailChannel:
    (found,) = [c for c in app.channels if isinstance(c, EmailChannel)]
    return found


async def push_latency(fake: FakeAnthropic, ann: Person, bot: str, port: int) -> None:
    latencies = []
    for i in range(MAILS):
        await asyncio.sleep(random.uniform(0, 7.5))  # anywhere in the 7 s IDLE cycle
        await aiosmtplib.send(ann.compose(bot, f"b{i}", f"bench mail {i}"), port=port)
        sent = time.monotonic()
        await fake.until(lambda calls, i=i: any(f"bench mail {i}" in c.last_text for c in calls))
        call = next(c for c in fake.calls if f"bench mail {i}" in c.last_text)
        latencies.append(call.at - sent)
    print(
        f"delivery -> LLM request, {MAILS} mails at random moments of the IDLE cycle: "
        f"p50 {pct(latencies, 0.5) * 1000:.0f} ms, p95 {pct(latencies, 0.95) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms"
    )


async def quiet_cost(app: App, mode: str) -> None:
    client = channel(app).watcher.client
    assert client is not None and client.imap is not None
    protocol = client.imap.protocol
    sent, heard = [0, 0], [0]
    send, received = protocol.send, protocol.data_received

    def counting_send(line: str, scrub: str | None = None) -> None:
        sent[0], sent[1] = sent[0] + 1, sent[1] + len(line) + 2
        send(line, scrub)

    def counting_received(data: bytes) -> None:
        heard[0] += len(data)
        received(data)

    protocol.send, protocol.data_received = counting_send, counting_received  # type: ignore[method-assign]
    await asyncio.sleep(QUIET_SECONDS)
    protocol.send, protocol.data_received = send, received  # type: ignore[method-assign]
    scale = 60 / QUIET_SECONDS
    print(
        f"quiet {mode} session, per minute: {sent[0] * scale:.1f} client lines "
        f"({sent[1] * scale:.0f} bytes), {heard[0] * scale:.0f} bytes from the server"
    )


async def until(check: Callable[[], bool], limit: float = 120) -> float:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < limit
        await asyncio.sleep(0.05)
    return time.monotonic() - start


async def detection(app: App, dovecot: Dovecot, mode: str) -> None:
    lost, back = [], []
    for _ in range(FREEZES):
        await asyncio.sleep(random.uniform(0, 7.5))
        dovecot.freeze()
        try:
            lost.append(await until(lambda: state(app) != "connected", 30))
        finally:
            dovecot.thaw()
        back.append(await until(lambda: state(app) == "connected"))
    print(
        f"frozen server ({mode}), {FREEZES} times: not connected after "
        f"{', '.join(f'{s:.1f}' for s in lost)} s (max {max(lost):.1f}, target <= 15: "
        f"{'met' if max(lost) <= 15 else 'NOT met'}); connected again "
        f"{', '.join(f'{s:.1f}' for s in back)} s after the thaw"
    )


@asynccontextmanager
async def bot_app(
    dovecot: Dovecot, fake: FakeAnthropic, port: int, host: str
) -> AsyncIterator[App]:
    with tempfile.TemporaryDirectory() as tmp:
        env = dovecot.env(f"bot-{host}@localhost", port, "@localhost")
        env.update(IMAP_HOST=host, EMAIL_MAX_PER_SENDER_PER_HOUR="100000")
        app = App(make_settings(Path(tmp), fake, **env), ["email"])
        await app.start()
        try:
            await eventually(lambda: state(app) == "connected")
            yield app
        finally:
            await app.stop()


async def main() -> None:
    dovecot = Dovecot(*make_ca())
    dovecot.start()
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    relay = await SmtpRelay(RelayHandler(dovecot, mx=True)).start()
    ann = Person("ann@localhost", dovecot, relay.port)
    try:
        async with bot_app(dovecot, fake, relay.port, "127.0.0.1") as app:
            await push_latency(fake, ann, "bot-127.0.0.1@localhost", relay.port)
            await quiet_cost(app, "IDLE")
            await detection(app, dovecot, "IDLE")
        async with bot_app(dovecot, fake, relay.port, "127.0.0.2") as app:  # no IDLE offered
            await quiet_cost(app, "polling")
            await detection(app, dovecot, "polling")
    finally:
        await relay.stop()
        fake.stop()
        dovecot.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
