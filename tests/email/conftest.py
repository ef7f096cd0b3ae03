"""Email fixtures: a fresh relay and fresh addresses per test, on the session's dovecot
(tests/kits/mail_kit.py)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.app import App
from channels.email import EmailChannel
from config.settings import Settings
from tests.email.person import Person
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import make_settings

_n = itertools.count(1)


@dataclass
class MailWorld:
    """The bot's address, a person (Ann) with her own mailbox, and the SMTP relay."""

    dovecot: Dovecot
    relay: SmtpRelay
    handler: RelayHandler
    bot: str
    ann: Person

    def env(self, **extra: str) -> dict[str, str]:
        return {**self.dovecot.env(self.bot, self.relay.port, self.ann.address), **extra}

    def settings(self, data_dir: Path, fake: FakeAnthropic, **extra: str) -> Settings:
        return make_settings(data_dir, fake, **self.env(**extra))

    def person(self, name: str) -> Person:
        return Person(f"{name}{self.bot[3:]}", self.dovecot, self.relay.port)


@pytest.fixture
async def world(dovecot: Dovecot) -> AsyncIterator[MailWorld]:
    n = next(_n)
    handler = RelayHandler(dovecot)
    relay = await SmtpRelay(handler).start()
    ann = Person(f"ann{n}@localhost", dovecot, relay.port)
    try:
        yield MailWorld(dovecot, relay, handler, f"bot{n}@localhost", ann)
    finally:
        await relay.stop()


@contextlib.asynccontextmanager
async def email_app(settings: Settings) -> AsyncIterator[App]:
    """The real app with the email channel enabled, as `switchboard run` builds it."""
    app = App(settings, ["email"])
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def channel_of(app: App) -> EmailChannel:
    (channel,) = [c for c in app.channels if isinstance(c, EmailChannel)]
    return channel
