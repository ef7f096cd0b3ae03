"""Helpers for the Slack tests: the fake Slack, and the app running with the real
Slack channel (built through the app's own wiring, as `switchboard run` does)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from bot.app import App
from channels.slack.channel import SlackChannel
from config.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kit import make_settings

MENTION = f"<@{BOT_USER}>"


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
