"""Helpers for the Slack tests: the fake Slack, and the app running with the real
Slack channel (built through the app's own wiring, as `switchboard run` does).

The `slack` fixture (a fake Slack per test) is registered for every test in tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from channels.slack.channel import SlackChannel
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.app_kit import make_settings

MENTION = f"<@{BOT_USER}>"


@pytest.fixture(name="slack")
def slack_fake_fixture() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


def heard(call: Call) -> list[dict[str, Any]]:
    """A responder that says what it heard."""
    return [text(f"heard: {call.last_text}")]


def slack_settings(
    data_dir: Path, fake: FakeAnthropic, slack: FakeSlack, mode: str = "socket", **env: str
) -> Settings:
    return make_settings(data_dir, fake, **slack.env(mode), SLACK_PACE_SECONDS="0.02", **env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def slack_app(settings: Settings) -> AsyncIterator[tuple[App, SlackChannel]]:
    app = App(settings, ["slack"])
    await app.start()
    try:
        channel = app.channels[0]
        assert isinstance(channel, SlackChannel)
        await asyncio.wait_for(channel.ready.wait(), 10)
        yield app, channel
    finally:
        await app.stop()


def texts(slack: FakeSlack) -> list[str]:
    return [str(p["text"]) for p in slack.posts]


def posted(words: str) -> Callable[[FakeSlack], bool]:
    """A condition for `slack.until`: some post's text contains `words`."""
    return lambda slack: any(words in t for t in texts(slack))


def post_with(slack: FakeSlack, words: str) -> dict[str, Any]:
    """The first post whose text contains `words`."""
    return next(p for p in slack.posts if words in p["text"])


def http_settings(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack) -> Settings:
    """Slack in HTTP Events mode, the app serving it on a free port of 127.0.0.1."""
    port = free_port()
    slack.http_endpoint = f"http://127.0.0.1:{port}/slack/events"
    return slack_settings(
        tmp_path,
        fake,
        slack,
        mode="http",
        SWITCHBOARD_HTTP_HOST="127.0.0.1",
        SWITCHBOARD_HTTP_PORT=str(port),
    )
