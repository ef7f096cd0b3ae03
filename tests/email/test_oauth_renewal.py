"""Tokens that expire under a live session: an IDLE session signs in afresh before its
token is due (no mail lost, none answered twice), a send whose cached token was revoked
gets a fresh one (the mail goes out once), and a sign-in a person must fix is one line
in the log, `switchboard status`, `/healthz` and the dashboard, retried with backoff
until it works again, when the channel says it is back."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from bot.app import App
from bot.ledger.report import full_status
from bot.ops.views import channels as dashboard_channels
from tests.email.conftest import channel_of, email_app
from tests.email.servers import RelayHandler, SmtpRelay
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.app_kit import eventually
from tests.kits.oauth_kit import OAuthWorld
from tests.kits.ops_kit import free_port, get


async def test_idle_renews_its_sign_in_before_the_token_expires_losing_no_mail(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    oauth.idp.lifetime = 6.0  # renewed 1.5 s before it ends
    async with email_app(oauth.settings(tmp_path, fake)) as app:
        watcher = channel_of(app).watcher
        await eventually(lambda: watcher.state[0] == "connected", 15)
        for n in range(6):  # across at least one renewal
            await oauth.ann.send(oauth.ann.compose(oauth.bot, f"m-{n}", f"question m-{n}?"))
            await asyncio.sleep(1.5)
        await oauth.ann.wait_mail(6, match="answered", timeout=40)
        assert watcher.renewals >= 1
    answers = await oauth.ann.inbox()
    assert sorted(str(m["Subject"]) for m in answers) == [f"Re: m-{n}" for n in range(6)]
    assert len(fake.calls) == 6  # each mail reached the model once
    assert oauth.idp.record.grants.count("client_credentials") >= 2


async def test_a_revoked_token_is_one_line_everywhere_and_the_channel_comes_back(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld, caplog: pytest.LogCaptureFixture
) -> None:
    fake.responder = lambda call: [text("answered")]
    oauth.idp.lifetime = 6.0
    port = free_port()
    settings = oauth.settings(tmp_path, fake, SWITCHBOARD_HTTP_PORT=str(port))
    caplog.set_level(logging.INFO)
    async with email_app(settings) as app:
        watcher = channel_of(app).watcher
        await eventually(lambda: watcher.state[0] == "connected", 15)
        oauth.idp.clients[oauth.app_id].secret = "rotated-by-an-admin"  # ours is stale now
        oauth.idp.revoke_all(oauth.bot)  # mid-IDLE
        await eventually(lambda: watcher.state[0] == "signin-failed", 20)
        await oauth.ann.send(oauth.ann.compose(oauth.bot, "m-outage", "while signed out?"))
        line = watcher.state[1]
        assert "EMAIL_OAUTH_CLIENT_SECRET" in line and "\n" not in line
        status, body, _ = await get(f"http://127.0.0.1:{port}/healthz")
        health = json.loads(body)
        assert status == 503 and health["channels"]["email"] == "signin-failed"
        assert health["channel_details"]["email"] == line  # the token holder reads the line
        assert line in full_status(app.store)
        assert line in str(dashboard_channels(app.ops.view))
        assert any(line in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
        oauth.idp.clients[oauth.app_id].secret = "app-secret-0123456789"  # fixed
        await eventually(lambda: watcher.state[0] == "connected", 90)
        await oauth.ann.wait_mail(1, match="answered", timeout=30)
    assert any("connected again" in r.getMessage() for r in caplog.records)
    assert len(fake.calls) == 1  # the mail of the outage, answered once


async def test_a_refresh_token_revoked_mid_idle_asks_for_a_new_one_and_loses_no_mail(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    oauth.idp.lifetime = 6.0
    oauth.idp.client("google-app", secret="g-secret-0123456789", mailbox=oauth.bot)

    def google(refresh: str) -> dict[str, str]:
        return {
            "EMAIL_OAUTH_PROVIDER": "google", "EMAIL_OAUTH_CLIENT_ID": "google-app",
            "EMAIL_OAUTH_CLIENT_SECRET": "g-secret-0123456789",
            "EMAIL_OAUTH_REFRESH_TOKEN": refresh,
            "EMAIL_OAUTH_TOKEN_URL": f"{oauth.idp.base()}/google/token",
        }  # fmt: skip

    first = oauth.idp.refresh_token("google-app", oauth.bot)
    async with email_app(oauth.settings(tmp_path, fake, **google(first))) as app:
        watcher = channel_of(app).watcher
        await eventually(lambda: watcher.state[0] == "connected", 15)
        oauth.idp.revoke_all(oauth.bot)  # the person revoked the bot's access, mid-IDLE
        await eventually(lambda: watcher.state[0] == "signin-failed", 20)
        assert "EMAIL_OAUTH_REFRESH_TOKEN" in watcher.state[1]
        await oauth.ann.send(oauth.ann.compose(oauth.bot, "m-outage", "still there?"))
    second = oauth.idp.refresh_token("google-app", oauth.bot)  # a new sign-in, set anew
    async with email_app(oauth.settings(tmp_path, fake, **google(second))) as app:
        await oauth.ann.wait_mail(1, match="answered", timeout=30)
    assert len(fake.calls) == 1


async def test_an_smtp_server_refusing_the_sign_in_shows_on_the_channel_and_mail_waits(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    fake.responder = lambda call: [text("answered")]
    plain = await SmtpRelay(RelayHandler(oauth.dovecot)).start()  # PLAIN/LOGIN only
    try:
        settings = oauth.settings(tmp_path, fake, SMTP_PORT=str(plain.port))
        async with email_app(settings) as app:
            await oauth.ann.send(oauth.ann.compose(oauth.bot, "m-1", "hello?"))
            await eventually(lambda: _email(app)[0] == "signin-failed", 30)
            line = _email(app)[1]
            assert "SMTP" in line and "offers neither XOAUTH2 nor OAUTHBEARER" in line
            assert not plain.handler.accepted and app.store.views.outbox_pending()
    finally:
        await plain.stop()


def _email(app: App) -> tuple[str, str]:
    return next((s, d) for c, s, d, _ in app.store.health() if c == "email")
