"""OAuth2 sign-in benchmark (not collected by pytest): `python tests/bench/bench_email_oauth.py`.

1. Mail arrival -> model request, password beside OAuth2 (XOAUTH2, the generic
   provider's client-credentials token, checked by dovecot's oauth2 passdb through
   introspection at the fake identity provider): a mail is delivered into dovecot over
   LMTP; the clock stops when the fake Anthropic API receives the request it causes.
   MAILS mails one at a time, p50/p95 each, and the difference (target: OAuth2 no
   slower than password by more than 50 ms).
2. The cost of a token refresh on a live IDLE session: tokens live RENEW_LIFETIME s,
   so the session signs in afresh every ~3/4 of that; measured from the old session's
   close to the new session's first IDLE (token fetch, connect, AUTHENTICATE, SELECT,
   catch-up), and the arrival -> model request latency of mails sent all along.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.app import App
from channels.email.imap import ImapWatcher
from channels.email.imap_client import ImapClient
from tests.email.conftest import channel_of
from tests.email.oauth_servers import OAuthDovecot, XOAuthSmtp
from tests.email.person import Person
from tests.email.servers import PASSWORD, RelayHandler, SmtpRelay, make_ca
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.oauth_idp import FakeIdP
from tests.kits.app_kit import eventually, make_settings

MAILS = 40
RENEW_LIFETIME = 4.0
RENEW_SECONDS = 30.0
SECRET = "bench-secret-0123456789"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def latency(fake: FakeAnthropic, ann: Person, bot: str, tag: str) -> float:
    mail = ann.compose(bot, f"{tag}", f"bench mail {tag}")
    await ann.send(mail)
    sent = time.monotonic()
    await fake.until(lambda calls: any(f"bench mail {tag}" in c.last_text for c in calls), 30)
    call = next(c for c in fake.calls if f"bench mail {tag}" in c.last_text)
    return call.at - sent


async def run_app(env: dict[str, str], fake: FakeAnthropic, body: object) -> object:
    with tempfile.TemporaryDirectory() as tmp:
        app = App(make_settings(Path(tmp), fake, **env), ["email"])
        await app.start()
        try:
            await eventually(lambda: ("email", "connected") in [h[:2] for h in app.store.health()])
            return await body(app)  # type: ignore[operator]
        finally:
            await app.stop()


def summary(label: str, values: list[float]) -> tuple[float, float]:
    p50, p95 = pct(values, 0.5), pct(values, 0.95)
    print(f"{label}: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
          f"max {max(values) * 1000:.0f} ms over {len(values)} mails")  # fmt: skip
    return p50, p95


async def main() -> None:
    ca, cert, key = make_ca()
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    with FakeIdP((cert, key)) as idp:
        dovecot = OAuthDovecot(ca, cert, key, f"{idp.base()}/introspect")
        dovecot.start()
        handler = RelayHandler(dovecot, deliver=False)  # the bot's answers go nowhere
        plain = await SmtpRelay(handler).start()
        xoauth = await XOAuthSmtp(handler, f"{idp.base()}/introspect").start()
        ports = {"password": plain.port, "oauth2": xoauth.port}
        try:
            await compare(idp, dovecot, fake, ports)
            await renewals(idp, dovecot, fake, ports["oauth2"])
        finally:
            await plain.stop()
            await xoauth.stop()
            dovecot.cleanup()
            fake.stop()


def oauth_env(idp: FakeIdP, dovecot: OAuthDovecot, bot: str, ann: str, port: int) -> dict[str, str]:
    idp.client(f"app-{bot}", secret=SECRET, mailbox=bot)
    return {
        **dovecot.oauth_env(bot, port, ann), "EMAIL_OAUTH_TOKEN_URL": f"{idp.base()}/token",
        "EMAIL_OAUTH_CLIENT_ID": f"app-{bot}", "EMAIL_OAUTH_CLIENT_SECRET": SECRET,
        "EMAIL_MAX_PER_SENDER_PER_HOUR": "100000",
    }  # fmt: skip


async def compare(
    idp: FakeIdP, dovecot: OAuthDovecot, fake: FakeAnthropic, ports: dict[str, int]
) -> None:
    results = {}
    for mode in ("password", "oauth2"):
        bot, ann = f"{mode}-bot@localhost", Person(f"{mode}-ann@localhost", dovecot, 1)
        env = (
            {**dovecot.env(bot, ports[mode], ann.address), "IMAP_PASSWORD": PASSWORD,
             "EMAIL_MAX_PER_SENDER_PER_HOUR": "100000"}
            if mode == "password" else oauth_env(idp, dovecot, bot, ann.address, ports[mode])
        )  # fmt: skip

        async def body(
            app: App, mode: str = mode, ann: Person = ann, bot: str = bot
        ) -> list[float]:
            return [await latency(fake, ann, bot, f"{mode}-{i}") for i in range(MAILS)]

        values = await run_app(env, fake, body)
        assert isinstance(values, list)
        results[mode] = summary(f"arrival -> model request, {mode} sign-in", values)
    diff = (results["oauth2"][1] - results["password"][1]) * 1000
    verdict = "met" if diff <= 50 else "NOT met"
    print(f"OAuth2 p95 minus password p95: {diff:+.0f} ms (target <= +50 ms: {verdict})")


async def renewals(idp: FakeIdP, dovecot: OAuthDovecot, fake: FakeAnthropic, port: int) -> None:
    bot, ann = "renew-bot@localhost", Person("renew-ann@localhost", dovecot, 1)
    env = oauth_env(idp, dovecot, bot, ann.address, port)
    closed: list[float] = []
    gaps: list[float] = []
    close, idle = ImapClient.close, ImapWatcher._idle

    async def timed_close(self: ImapClient) -> None:
        closed.append(time.monotonic())
        await close(self)

    async def timed_idle(self: ImapWatcher, client: ImapClient, seconds: float) -> None:
        if self.renewals > len(gaps) and closed:
            gaps.append(time.monotonic() - closed[-1])
        await idle(self, client, seconds)

    ImapClient.close, ImapWatcher._idle = timed_close, timed_idle  # type: ignore[method-assign]
    idp.lifetime = RENEW_LIFETIME

    async def body(app: App) -> list[float]:
        values, start, n = [], time.monotonic(), 0
        while time.monotonic() - start < RENEW_SECONDS:
            values.append(await latency(fake, ann, bot, f"renew-{n}"))
            n += 1
            await asyncio.sleep(0.2)
        print(f"renewals during {RENEW_SECONDS:g}s: {channel_of(app).watcher.renewals}")
        return values

    try:
        values = await run_app(env, fake, body)
    finally:
        ImapClient.close, ImapWatcher._idle = close, idle  # type: ignore[method-assign]
    assert isinstance(values, list)
    if gaps:
        print(f"token refresh on a live IDLE session (close -> next IDLE): p50 "
              f"{pct(gaps, 0.5) * 1000:.1f} ms, max {max(gaps) * 1000:.1f} ms "
              f"over {len(gaps)} renewals")  # fmt: skip
    summary("arrival -> model request while the session renews its token", values)


if __name__ == "__main__":
    asyncio.run(main())
