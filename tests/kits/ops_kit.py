"""The operator kit: an app serving HTTP on a free port, a channel whose health a test
sets, helpers to read `/metrics` as Prometheus would, and the dashboard's sign-in and
forms over plain HTTP; an app whose MCP tool waits for an approval."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
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
from tests.kits.tools_kit import stdio_entry, tools_settings

TOKEN = "a-dashboard-token-for-tests-0123"  # the dashboard's token in the dashboard tests
RESTART = 'call ops__restart_service {"service": "api"}'  # a person's line: the gated call


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


#: /healthz is polled this often by healthz_until, on top of a channel's own waits
HEALTHZ_POLL = 0.25


async def healthz_until(url: str, status: int, limit: float) -> float:
    """Poll /healthz (bounded) until it answers `status`; the seconds it took."""
    start = time.monotonic()
    while (await get(url + "/healthz"))[0] != status:
        assert time.monotonic() - start < limit, f"/healthz never became {status}"
        await asyncio.sleep(HEALTHZ_POLL)
    return time.monotonic() - start


def scale_waits(monkeypatch: Any, scale: float, waits: tuple[tuple[Any, str], ...]) -> None:
    """A channel's health waits, (module, constant name) each, cut to `scale`: a test
    then holds its "/healthz 503 within 15 s" at 15 * scale s, the same logic with less
    waiting, and another test checks the real waits add up to 15 s."""
    for module, name in waits:
        monkeypatch.setattr(module, name, getattr(module, name) * scale)


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


async def sign_in(session: aiohttp.ClientSession, url: str) -> str:
    """Log in; the CSRF token of the overview's forms."""
    async with session.post(url + "/login", data={"token": TOKEN}) as response:
        assert response.status == 200
    async with session.get(url + "/", headers={"Accept": "text/html"}) as response:
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', await response.text())
    assert found is not None
    return found.group(1)


async def post(session: aiohttp.ClientSession, url: str, data: dict[str, str]) -> tuple[int, str]:
    async with session.post(url, data=data) as response:
        return response.status, await response.text()


FLASH = re.compile(r'<div class="flash (ok|error)" role="status">([^<]*)</div>')


async def act(
    session: aiohttp.ClientSession, url: str, data: dict[str, str]
) -> tuple[str, str, str]:
    """Post a dashboard action as a browser would: it must answer 303 to a page on this
    site; that page is read. (where it went, "ok" or "error", the message shown)."""
    async with session.post(url, data=data, allow_redirects=False) as response:
        assert response.status == 303, (response.status, await response.text())
        where = response.headers["Location"]
    assert where.startswith("/") and not where.startswith("//"), where
    base = url.split("/actions/")[0]
    async with session.get(base + where, headers={"Accept": "text/html"}) as page:
        assert page.status == 200
        found = FLASH.search(await page.text())
    assert found is not None, where
    return where, found.group(1), html.unescape(found.group(2))


@contextlib.asynccontextmanager
async def gated_app(
    tmp_path: Path, fake: FakeAnthropic
) -> AsyncIterator[tuple[App, HealthyRecorder, str]]:
    """An app with the test MCP server's `restart_*` tools behind an approval and the
    dashboard (its token `TOKEN`) on a free port; yields it, its channel and the URL."""
    port = free_port()
    env = {"SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*"])
    settings = tools_settings(tmp_path, fake, [entry], SWITCHBOARD_HTTP_PORT=str(port), **env)
    channel = HealthyRecorder()

    def attach(app: App) -> None:
        channel.human = app.human

    async with running_app(settings, [channel], [attach]) as app:
        await app.mcp.wait_connected(30)
        yield app, channel, f"http://127.0.0.1:{port}"
