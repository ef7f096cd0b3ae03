"""The dashboard over HTTP: access (bearer, login cookie, 401s), escaping, paging with
a thousand workers and a long conversation, and the live event stream with a client
that never reads."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import aiohttp
import pytest

from bot.ops import live as live_module
from bot.store.core import WorkerRow
from bot.store.schema import WorkerStatus
from config.settings import SettingsError, load_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import eventually, inbound
from tests.kits.ops_kit import get, served_app

TOKEN = "0123456789abcdef-dashboard"
HTML = {"Accept": "text/html"}


async def test_the_token_is_asked_for_and_checked(tmp_path: Path, fake: FakeAnthropic) -> None:
    async with served_app(tmp_path, fake, SWITCHBOARD_DASHBOARD_TOKEN=TOKEN) as (_a, _c, url):
        anonymous = await get(url + "/", headers=HTML)
        wrong = await get(url + "/", headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"})
        stream = await get(url + "/events/stream")
        right = await get(url + "/", headers={"Authorization": "Bearer " + TOKEN})
        health = await get(url + "/healthz")
        jar = aiohttp.CookieJar(unsafe=True)  # keep cookies of 127.0.0.1, as a browser does
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            async with session.post(url + "/login", data={"token": "nope"}) as bad_login:
                bad_status = bad_login.status
            async with session.post(
                url + "/login", data={"token": TOKEN}, allow_redirects=False
            ) as login:
                cookie = login.headers["Set-Cookie"]
                login_status = login.status
            async with session.get(url + "/conversations") as after_login:
                after_status = after_login.status
    assert anonymous[0] == 401 and 'name="token"' in anonymous[1]
    assert wrong[0] == 401 and "SWITCHBOARD_DASHBOARD_TOKEN" in wrong[1]
    assert stream[0] == 401
    assert right[0] == 200 and "Agents and workers" in right[1]
    assert health[0] == 200  # health checks need no token
    assert bad_status == 401
    assert login_status == 303 and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert TOKEN not in cookie
    assert after_status == 200
    for page in (anonymous[1], wrong[1], right[1]):
        assert TOKEN not in page and "test-key" not in page


async def test_loopback_without_a_token_is_open(tmp_path: Path, fake: FakeAnthropic) -> None:
    async with served_app(tmp_path, fake) as (_app, _channel, url):
        status, text, headers = await get(url + "/")
    assert status == 200 and "Recent events" in text
    assert "script-src 'self'" in headers["Content-Security-Policy"]


def test_a_network_bind_without_a_token_is_a_settings_error() -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(None, {"SWITCHBOARD_HTTP_HOST": "0.0.0.0", "PORT": "8080"})
    assert str(info.value).startswith("SWITCHBOARD_DASHBOARD_TOKEN is required when")
    assert "\n" not in str(info.value)
    load_settings(None, {"SWITCHBOARD_HTTP_HOST": "::1", "PORT": "8080"})  # loopback: fine


async def test_text_from_people_and_models_is_escaped(tmp_path: Path, fake: FakeAnthropic) -> None:
    async with served_app(tmp_path, fake) as (app, channel, url):
        app.store.agents.upsert_worker(_worker(1, task="<img src=x onerror=alert(1)> & co"))
        app.human.accept(inbound("<script>alert('x')</script>"))
        await channel.wait_text("alert")
        _, overview, _ = await get(url + "/")
        _, convo, _ = await get(url + "/conversation?agent=coordinator&key=terminal")
    assert (
        "<img src=x" not in overview and "&lt;img src=x onerror=alert(1)&gt; &amp; co" in overview
    )
    assert "<script>alert" not in convo and "&lt;script&gt;alert(&#x27;x&#x27;)" in convo


async def test_a_thousand_workers_and_a_long_conversation_are_paged(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake) as (app, _channel, url):
        with app.store.tx():
            for i in range(1000):
                app.store.agents.upsert_worker(
                    _worker(i, status="parked" if i % 10 == 0 else "done")
                )
        turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"}
                 for i in range(5000)]  # fmt: skip
        app.store.agents.save_conversation("coordinator", "long", turns, "terminal")
        _, first, _ = await get(url + "/")
        _, last_workers, _ = await get(url + "/?page=20")
        _, newest, _ = await get(url + "/conversation?agent=coordinator&key=long")
        _, oldest, _ = await get(url + "/conversation?agent=coordinator&key=long&page=1")
    assert first.count('href="/conversation?agent=w') == 50 and "older" in first
    assert "Workers: 900 done, 100 parked" in first
    assert last_workers.count('href="/conversation?agent=w') == 50
    assert "page 125 of 125 (5000 messages)" in newest and "turn 4999" in newest
    assert "turn 4959" not in newest and "turn 4960" in newest
    assert "turn 0<" in oldest and "turn 40<" not in oldest


async def test_older_events_are_paged_from_the_end_of_the_log(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake) as (app, _channel, url):
        for i in range(250):
            app.events.emit("test.numbered", "tester", n=i)
        _, newest, _ = await get(url + "/events")
        older = newest.split('href="/events?before=')[1].split('"')[0]
        _, second, _ = await get(url + "/events?before=" + older)

    def has(page: str, n: int) -> bool:
        return f"<span class=what>n {n}</span>" in page

    assert has(newest, 249) and has(newest, 150) and not has(newest, 149)
    assert has(second, 149) and has(second, 50) and not has(second, 49)


async def test_live_events_reach_a_reading_client_and_drop_one_that_never_reads(
    tmp_path: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_module, "QUEUE_LIMIT", 64)
    async with served_app(tmp_path, fake) as (app, _channel, url):
        live = app.ops.live
        port = int(url.rsplit(":", 1)[1])
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", port))
        stalled.sendall(f"GET /events/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/events/stream") as stream:
                seen: list[str] = []
                reader = asyncio.create_task(_read_types(stream, seen))
                await eventually(lambda: len(live.clients) == 2)
                sent = 0
                while live.dropped == 0 and sent < 200_000:
                    for _ in range(32):
                        app.events.emit("test.flood", "tester", n=sent)
                        sent += 1
                    # the reader reads all of it; the stalled socket fills, then its queue
                    await eventually(lambda: len(seen) >= sent)  # noqa: B023
                assert live.dropped == 1 and len(live.clients) == 1  # the reader is still served
                app.events.emit("test.after", "tester")
                await eventually(lambda: "test.after" in seen)
                reader.cancel()
        stalled.close()
    assert seen.count("test.flood") == sent  # the reading client missed nothing
    assert all(c.queue.qsize() <= 64 for c in live.clients)


async def _read_types(stream: aiohttp.ClientResponse, seen: list[str]) -> None:
    async for line in stream.content:
        if line.startswith(b"data: "):
            seen.append(json.loads(line[6:])["type"])


def _worker(i: int, status: WorkerStatus = "parked", task: str = "") -> WorkerRow:
    now = time.time()
    return WorkerRow(
        f"w{i:04d}", f"W{i:04d}", task or f"task {i}", status, None, "terminal", turns=3,
        created_at=now - i, updated_at=now - i,
    )  # fmt: skip


def test_pending_approvals_are_listed_escaped() -> None:
    from bot.ops import views
    from bot.store.approvals import ApprovalRow

    row = ApprovalRow(
        "a1", "alice", "task", "Alice", "ops__restart", {"service": "<b>web</b>"}, "toolu_1",
        "slack:C1", requested_at=time.time() - 90,
    )  # fmt: skip
    html = views.approvals([row], "t")
    assert "Pending approvals (1)" in html and "ops__restart" in html
    assert "<b>web</b>" not in html and "&lt;b&gt;web&lt;/b&gt;" in html
