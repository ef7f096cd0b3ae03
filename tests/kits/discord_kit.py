"""Test kit for the Discord channel: the fake Discord, and an app wired to it.

`discord_app` builds the app the way `switchboard run` does (the `discord` channel
name, imported lazily by `bot/app.py`) and waits until the gateway session is up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from bot.app import App
from channels.discord import DiscordChannel
from config.settings import Settings
from tests.fakes import discord_payloads as dp
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord, Post
from tests.kits.app_kit import make_settings

MENTION = f"<@{dp.BOT_ID}>"


@pytest.fixture(name="discord_fake")
def discord_fake_fixture() -> Iterator[FakeDiscord]:
    """A fake Discord per test; registered for every test in tests/conftest.py."""
    with FakeDiscord() as server:
        yield server


def discord_settings(
    tmp_path: Path, fake: FakeAnthropic, discord_fake: FakeDiscord, **env: str
) -> Settings:
    return make_settings(tmp_path / "data", fake, **discord_fake.env(), **env)


@contextlib.asynccontextmanager
async def discord_app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings, ["discord"])
    await app.start()
    try:
        await asyncio.wait_for(channel_of(app).client.connected.wait(), 10)
        yield app
    finally:
        await app.stop()


def posted(words: str) -> Callable[[list[Post]], bool]:
    """A condition for `discord_fake.until`: some post's content contains `words`."""
    return lambda posts: any(words in p.content for p in posts)


def post_with(discord_fake: FakeDiscord, words: str) -> Post:
    """The first post whose content contains `words`."""
    return next(p for p in discord_fake.posts if words in p.content)


def channel_of(app: App) -> DiscordChannel:
    channel = next(c for c in app.channels if c.kind == "discord")
    assert isinstance(channel, DiscordChannel)
    return channel


def is_balanced(part: str) -> bool:
    """Every code fence opened in a part is closed in it."""
    return sum(1 for line in part.split("\n") if line.strip().startswith("```")) % 2 == 0
