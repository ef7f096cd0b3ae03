"""Sending with OAuth2: an aiosmtpd server that accepts XOAUTH2 only and asks the fake
identity provider about each token. A token revoked while cached is refused the way
Gmail refuses it (334 with a JSON error, then 535 after the client's empty line): the
sender gets a fresh token and the mail goes out once. A server that offers no XOAUTH2
and a token for another mailbox are one line each, transient for the outbox (the mail
waits; it is never given up as a 5xx would be)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from bot.seam import TransientDeliveryError
from channels.email.oauth_providers import token_source
from channels.email.smtp import SmtpSender
from config.settings import Settings, load_settings
from tests.email.oauth_servers import XOAuthSmtp
from tests.email.servers import RelayHandler, SmtpRelay
from tests.fakes.oauth_idp import FakeIdP

SECRET = "smtp-secret-0123"


@pytest.fixture
async def server(idp: FakeIdP) -> AsyncIterator[XOAuthSmtp]:
    idp.reset()
    idp.client("smtp-app", secret=SECRET, mailbox="sender@localhost")
    handler = RelayHandler(dovecot=None, deliver=False)  # type: ignore[arg-type]
    relay = await XOAuthSmtp(handler, f"{idp.base()}/introspect").start()
    yield relay
    await relay.stop()


def _settings(idp: FakeIdP, tmp_path: Path, port: int, **env: str) -> Settings:
    return load_settings(None, {
        "SWITCHBOARD_DATA_DIR": str(tmp_path), "EMAIL_ADDRESS": "sender@localhost",
        "EMAIL_AUTHSERV_ID": "mx.test", "IMAP_HOST": "127.0.0.1", "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(port), "SMTP_TLS": "none", "EMAIL_AUTH": "oauth2",
        "EMAIL_OAUTH_TOKEN_URL": f"{idp.base()}/token", "EMAIL_OAUTH_CLIENT_ID": "smtp-app",
        "EMAIL_OAUTH_CLIENT_SECRET": SECRET, **env,
    })  # fmt: skip


def _mail(subject: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "sender@localhost", "ann@localhost", subject
    mail.set_content("hello")
    return mail


def _sender(settings: Settings) -> SmtpSender:
    return SmtpSender(settings, token_source(settings))


async def test_a_token_revoked_while_cached_is_replaced_and_the_mail_goes_once(
    idp: FakeIdP, server: XOAuthSmtp, tmp_path: Path
) -> None:
    sender = _sender(_settings(idp, tmp_path, server.port))
    await sender.send(_mail("one"), "sender@localhost", ["ann@localhost"])
    idp.revoke_all("sender@localhost")  # the cached token dies (an expiry, a revocation)
    idp.client("smtp-app", secret=SECRET, mailbox="sender@localhost")
    await sender.send(_mail("two"), "sender@localhost", ["ann@localhost"])
    subjects = [_subject(e) for e in server.handler.accepted]
    assert subjects == ["one", "two"]  # each once
    assert server.refused == 1 and server.signed_in == ["sender@localhost"] * 2
    assert sender.problem is None


async def test_a_token_for_another_mailbox_is_transient_with_one_line(
    idp: FakeIdP, server: XOAuthSmtp, tmp_path: Path
) -> None:
    sender = _sender(_settings(idp, tmp_path, server.port, SMTP_USER="boss@localhost"))
    with pytest.raises(TransientDeliveryError) as caught:
        await sender.send(_mail("x"), "sender@localhost", ["ann@localhost"])
    line = str(caught.value)
    assert "the SMTP server refused the OAuth2 token for boss@localhost" in line
    assert "SMTP_USER" in line and "\n" not in line and sender.problem == line
    assert server.handler.accepted == []


async def test_a_server_offering_no_xoauth2_is_one_line(idp: FakeIdP, tmp_path: Path) -> None:
    relay = await SmtpRelay(RelayHandler(dovecot=None, deliver=False)).start()  # type: ignore[arg-type]
    try:
        sender = _sender(_settings(idp, tmp_path, relay.port))
        with pytest.raises(TransientDeliveryError, match="offers neither XOAUTH2 nor OAUTHBEARER"):
            await sender.send(_mail("x"), "sender@localhost", ["ann@localhost"])
    finally:
        await relay.stop()
    assert sender.problem is not None and "SMTP_HOST" in sender.problem


def _subject(envelope: Any) -> str:
    for line in (envelope.original_content or b"").decode().splitlines():
        if line.startswith("Subject: "):
            return line[len("Subject: ") :]
    return ""
