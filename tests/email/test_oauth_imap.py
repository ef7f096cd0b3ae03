"""IMAP sign-in with OAuth2 against a real dovecot checking tokens by introspection:
XOAUTH2 (and OAUTHBEARER) with SASL-IR, a refused token answered with the JSON
continuation (the client replies and gets the NO instead of hanging), a server that
offers neither mechanism, and the whole bot answering mail without a password."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from pathlib import Path

import pytest

from bot.core import redact
from channels.email import sasl
from channels.email.imap_client import ImapClient
from channels.email.oauth import SignInError, Token, TokenSource
from channels.email.oauth_providers import token_source
from tests.email.conftest import MailWorld, email_app
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.oauth_idp import Issued
from tests.kits.app_kit import make_settings
from tests.kits.oauth_kit import OAuthWorld


def _fixed(value: str) -> TokenSource:
    async def fetch() -> Token:
        now = time.time()
        return Token(value, now + 3600, now)

    return TokenSource(fetch)


async def test_the_bot_signs_in_with_xoauth2_and_answers_mail_without_a_password(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    fake.responder = lambda call: [text("answered by token")]
    settings = oauth.settings(tmp_path, fake)
    assert settings.imap_password is None and settings.smtp_password is None
    async with email_app(settings):
        await oauth.ann.send(oauth.ann.compose(oauth.bot, "hello", "are you there?"))
        await oauth.ann.wait_mail(1, match="answered by token", timeout=30)
    assert await oauth.dovecot.logged(f"user=<{oauth.bot}>, method=XOAUTH2")
    assert oauth.smtp.signed_in == [oauth.bot]  # the answer went out over XOAUTH2
    assert oauth.idp.record.grants.count("client_credentials") == 1  # one token for both


async def test_oauthbearer_signs_in_and_a_refused_token_gets_its_no_not_a_hang(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    settings = oauth.settings(tmp_path, fake)
    good = "at-good-" + oauth.bot
    oauth.idp.tokens[good] = Issued(oauth.bot, time.time() + 600)
    for mechanism in sasl.MECHANISMS:
        client = ImapClient(settings, asyncio.Event(), _fixed("at-not-issued"))
        await client.open()
        protocol = client._c.protocol
        initial = sasl.initial_response(mechanism, oauth.bot, "at-not-issued")
        started = time.monotonic()
        response, challenges = await protocol.authenticate(mechanism, initial, True)
        assert response.result == "NO" and time.monotonic() - started < 5  # no hang
        assert challenges, "dovecot sends its JSON error as a continuation first"
        initial = sasl.initial_response(mechanism, oauth.bot, good)
        response, _ = await protocol.authenticate(mechanism, initial, True)
        assert response.result == "OK", (mechanism, response)
        await client.close()
    assert await oauth.dovecot.logged(f"user=<{oauth.bot}>, method=OAUTHBEARER")


async def test_a_token_for_another_mailbox_is_one_line_naming_the_setting(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    oauth.idp.client(oauth.app_id, secret="app-secret-0123456789", mailbox="someone@localhost")
    settings = oauth.settings(tmp_path, fake)
    tokens = token_source(settings)
    assert tokens is not None
    client = ImapClient(settings, asyncio.Event(), tokens)
    with pytest.raises(SignInError) as caught:
        await client.connect()
    await client.close()
    line = caught.value.line
    assert line.startswith(f"the IMAP server refused the OAuth2 token for {oauth.bot}")
    assert "IMAP_USER" in line and "\n" not in line
    assert tokens.fetches == 2  # a fresh token was tried once before giving up


async def test_a_server_offering_no_xoauth2_is_one_line(
    tmp_path: Path, fake: FakeAnthropic, world: MailWorld, oauth: OAuthWorld
) -> None:
    env = {**oauth.env(), "IMAP_PORT": str(world.dovecot.imap)}  # plain login only
    settings = make_settings(tmp_path, fake, **env)
    client = ImapClient(settings, asyncio.Event(), _fixed("unused"))
    with pytest.raises(SignInError, match="offers neither XOAUTH2 nor OAUTHBEARER") as caught:
        await client.connect()
    await client.close()
    assert "IMAP_HOST" in caught.value.line and "AUTH=PLAIN" in caught.value.line


async def test_no_token_reaches_a_log_line_even_at_debug(
    tmp_path: Path, fake: FakeAnthropic, oauth: OAuthWorld
) -> None:
    settings = oauth.settings(tmp_path, fake)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    redactor = redact.Redactor(redact.configured_secrets(settings))
    handler.addFilter(redactor)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        tokens = token_source(settings)
        assert tokens is not None
        client = ImapClient(settings, asyncio.Event(), tokens)
        await client.connect()
        token = (await tokens.token()).value
        await client.close()
        logging.getLogger("x").error("server said: A1 AUTHENTICATE XOAUTH2 %s",
                                     sasl.xoauth2(oauth.bot, token).decode())  # fmt: skip
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    text = out.getvalue()
    assert "AUTHENTICATE" in text and token not in text
    assert sasl.xoauth2(oauth.bot, token).decode() not in text
    assert "app-secret-0123456789" not in text
    samples = ["eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib3QifQ.c2lnbmF0dXJl", "ya29.a0AfH6SMBx-123abc",
               "1//0gLd8xOXbYZ-abcdefghijklmnop"]  # fmt: skip
    assert all(s not in redactor.redact(f"token {s} here") for s in samples)
