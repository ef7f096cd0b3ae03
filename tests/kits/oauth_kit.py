"""OAuth2 sign-in for the email tests: a fake identity provider (`idp`, session-wide,
reset for each test by `oauth`), a dovecot that checks bearer tokens by introspection
at it (`oauth_dovecot`), and per test an `OAuthWorld`: the bot's address, a registered
app that may use that mailbox, Ann, and an SMTP server that accepts XOAUTH2 only."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.settings import Settings
from tests.email.oauth_servers import OAuthDovecot, XOAuthSmtp
from tests.email.person import Person
from tests.email.servers import RelayHandler
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.oauth_idp import FakeIdP
from tests.kits.app_kit import make_settings

_n = itertools.count(1)
SECRET = "app-secret-0123456789"


@dataclass
class OAuthWorld:
    idp: FakeIdP
    dovecot: OAuthDovecot
    smtp: XOAuthSmtp
    handler: RelayHandler
    bot: str
    app_id: str
    ann: Person

    def env(self, **extra: str) -> dict[str, str]:
        """The bot on the generic provider (client credentials at the fake's /token)."""
        return {
            **self.dovecot.oauth_env(self.bot, self.smtp.port, self.ann.address),
            "EMAIL_OAUTH_TOKEN_URL": f"{self.idp.base()}/token",
            "EMAIL_OAUTH_CLIENT_ID": self.app_id,
            "EMAIL_OAUTH_CLIENT_SECRET": SECRET,
            "EMAIL_OAUTH_SCOPE": "mail",
            **extra,
        }

    def settings(self, data_dir: Path, fake: FakeAnthropic, **extra: str) -> Settings:
        return make_settings(data_dir, fake, **self.env(**extra))


@pytest.fixture(scope="session")
def idp(tls_material: tuple[bytes, bytes, bytes]) -> Iterator[FakeIdP]:
    _ca, cert, key = tls_material
    with FakeIdP((cert, key)) as server:
        yield server


@pytest.fixture(scope="session")
def oauth_dovecot(tls_material: tuple[bytes, bytes, bytes], idp: FakeIdP) -> Iterator[OAuthDovecot]:
    server = OAuthDovecot(*tls_material, f"{idp.base()}/introspect")
    server.start()
    yield server
    server.cleanup()


@pytest.fixture
async def oauth(idp: FakeIdP, oauth_dovecot: OAuthDovecot) -> AsyncIterator[OAuthWorld]:
    n = next(_n)
    idp.reset()  # the record counts this test's grants only, whatever ran before it
    bot = f"obot{n}@localhost"
    app_id = f"app-{n}"
    idp.client(app_id, secret=SECRET, mailbox=bot)
    handler = RelayHandler(oauth_dovecot)
    smtp = await XOAuthSmtp(handler, f"{idp.base()}/introspect").start()
    ann = Person(f"oann{n}@localhost", oauth_dovecot, smtp.port)
    try:
        yield OAuthWorld(idp, oauth_dovecot, smtp, handler, bot, app_id, ann)
    finally:
        await smtp.stop()
