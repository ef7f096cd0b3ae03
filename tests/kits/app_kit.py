"""The test kit: settings for a temporary data dir, a recording channel, inbound
messages, and an app running in the test's loop against the fake Anthropic API.

Channel tests reuse it: build an `App` with `running_app`, hand it your channel (or
use `Recorder` for the terminal target), and drive it through the real SDKs.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from bot.app import App, Extension
from bot.core.channel import BaseChannel
from bot.core.messages import DeliveryReceipt, Inbound, Outbound, Sender, Target
from config.settings import Settings, load_settings
from tests.fakes.anthropic_api import FakeAnthropic

_ids = itertools.count(1)
NODE_TTL = "5"  # the default: a loop busy importing an SDK must not lose the lease


def make_settings(data_dir: Path, fake: FakeAnthropic, **env: str) -> Settings:
    """Answers are not streamed unless a test turns it on (`SWITCHBOARD_STREAMING="on"`):
    most tests read answers as whole posts (tests/slack/test_slack_live.py reads streams)."""
    environ = {
        "SWITCHBOARD_STREAMING": "off",
        **fake.env(),
        "SWITCHBOARD_DATA_DIR": str(data_dir),
        "SWITCHBOARD_LLM_RETRY_BASE_SECONDS": "0.05",
        "SWITCHBOARD_LLM_RETRY_MAX_SECONDS": "0.2",
        "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.05",
        **env,
    }
    return load_settings(None, environ)


class Recorder(BaseChannel):
    """An in-memory channel for the `terminal` target kind that records deliveries."""

    kind = "terminal"
    pace_seconds = 0.0

    def __init__(self) -> None:
        self.sent: list[Outbound] = []
        self._changed = asyncio.Event()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        self.sent.append(msg)
        self._changed.set()
        return DeliveryReceipt(platform_id=msg.id)

    def texts(self, agent: str | None = None) -> list[str]:
        return [m.text for m in self.sent if agent is None or m.agent == agent]

    async def wait_for(
        self, predicate: Callable[[list[Outbound]], bool], timeout: float = 10.0
    ) -> list[Outbound]:
        async with asyncio.timeout(timeout):
            while not predicate(self.sent):
                self._changed.clear()
                await self._changed.wait()
        return self.sent

    async def wait_count(self, n: int, timeout: float = 10.0) -> list[Outbound]:
        return await self.wait_for(lambda sent: len(sent) >= n, timeout)

    async def wait_text(self, words: str, timeout: float = 10.0) -> list[Outbound]:
        """Wait until the text of a delivered message contains `words`."""
        return await self.wait_for(lambda sent: any(words in m.text for m in sent), timeout)

    async def wait_kind(self, kind: str, timeout: float = 10.0) -> list[Outbound]:
        """Wait until a message of `kind` (a `question`, say) has been delivered."""
        return await self.wait_for(lambda sent: any(m.kind == kind for m in sent), timeout)


def inbound(
    text: str,
    conversation: str = "terminal",
    sender: str = "ann",
    message_id: str | None = None,
    reply_to: Target | None = None,
    thread_refs: list[str] | None = None,
    channel: str = "terminal",
) -> Inbound:
    return Inbound(
        channel=channel,
        message_id=message_id or f"m{next(_ids)}",
        conversation=conversation,
        sender=Sender(sender, sender.title()),
        text=text,
        reply_to=reply_to or Target("terminal"),
        thread_refs=thread_refs or [],
    )


@contextlib.asynccontextmanager
async def running_app(
    settings: Settings, channels: list[Any] | None = None, extensions: list[Extension] | None = None
) -> AsyncIterator[App]:
    app = App(settings, [], extensions)
    app.build()
    for channel in channels if channels is not None else [Recorder()]:
        app.add_channel(channel)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def events(data_dir: Path, type_prefix: str = "") -> list[dict[str, Any]]:
    path = data_dir / "events.jsonl"
    if not path.exists():
        return []
    out = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in out if e["type"].startswith(type_prefix)]


async def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


async def node(
    tmp_path: Path, fake: FakeAnthropic, url: str, name: str, **env: str
) -> tuple[App, Recorder]:
    """An app started as node `name` over the database at `url` (the data dir shared),
    with more settings from `env`."""
    settings = make_settings(
        tmp_path / "data",  # the data dir is shared by the nodes
        fake,
        SWITCHBOARD_DATABASE_URL=url,
        SWITCHBOARD_NODE_ID=name,
        SWITCHBOARD_LEADER_TTL_SECONDS=NODE_TTL,
        **env,
    )
    app = App(settings, [])
    app.build()
    rec = Recorder()
    app.add_channel(rec)
    await app.start()
    return app, rec
