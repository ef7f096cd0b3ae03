"""The operator kit: an app serving HTTP on a free port, a channel whose health a test
sets, and helpers to read `/metrics` as Prometheus would."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.app import App
from bot.inbox.human import HumanNode
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, make_settings, running_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HealthyRecorder(Recorder):
    """The terminal target's recorder, reporting its health like a real channel."""

    def __init__(self, human: HumanNode | None = None) -> None:
        super().__init__()
        self.human = human

    async def start(self) -> None:
        self.set("connected")

    def set(self, state: str) -> None:
        assert self.human is not None
        self.human.store.set_health(self.kind, state, "test")


@contextlib.asynccontextmanager
async def served_app(
    data_dir: Path, fake: FakeAnthropic, **env: str
) -> AsyncIterator[tuple[App, HealthyRecorder, str]]:
    """An app with the HTTP server on 127.0.0.1:<free port>; yields it, its recorder
    channel and the base URL."""
    port = free_port()
    settings = make_settings(data_dir, fake, SWITCHBOARD_HTTP_PORT=str(port), **env)
    channel = HealthyRecorder()

    def attach(app: App) -> None:
        channel.human = app.human

    async with running_app(settings, [channel], [attach]) as app:
        yield app, channel, f"http://127.0.0.1:{port}"


async def get(url: str, **kwargs: Any) -> tuple[int, str, dict[str, str]]:
    async with aiohttp.ClientSession() as session, session.get(url, **kwargs) as response:
        return response.status, await response.text(), dict(response.headers)


async def healthz_until(url: str, status: int, limit: float) -> float:
    """Poll /healthz (bounded) until it answers `status`; the seconds it took."""
    start = time.monotonic()
    while (await get(url + "/healthz"))[0] != status:
        assert time.monotonic() - start < limit, f"/healthz never became {status}"
        await asyncio.sleep(0.25)
    return time.monotonic() - start


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by (name, sorted labels)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(
    scrape: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)
