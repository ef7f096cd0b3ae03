"""web_fetch: pages as text; loopback, private and link-local addresses refused at
every hop, after DNS resolution, unless the host is allowed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from agents.tools import ToolError
from agents.web_fetch import FetchLimits, WebFetch
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kit import Recorder, inbound, make_settings, running_app
from tests.test_mcp import caller
from tests.tools_kit import free_port

PAGE = "<html><body><h1>Status</h1><p>All <b>green</b>.</p><script>x()</script></body></html>"


@contextlib.asynccontextmanager
async def site() -> AsyncIterator[int]:
    port = free_port()

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def to_localhost(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://localhost:{port}/")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="y" * 50_000, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/hop", to_localhost)
    app.router.add_get("/big", big)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield port
    finally:
        await runner.cleanup()


def fetcher(*allow: str, max_bytes: int = 1_000_000) -> WebFetch:
    return WebFetch(FetchLimits(frozenset(allow), max_bytes, 5.0, 20_000))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:1/", "127.0.0.1, a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254, a link-local address"),
        ("http://10.1.2.3/", "10.1.2.3, a private address"),
        ("http://[::1]:1/", "::1, a loopback address"),
        ("http://0.0.0.0:1/", "0.0.0.0, a"),
        ("http://localhost:1/", "localhost resolves to"),
    ],
)
async def test_local_addresses_are_refused(url: str, why: str) -> None:
    with pytest.raises(ToolError, match="refused: .*" + why.replace(".", r"\.")):
        await fetcher().handle({"url": url})


async def test_an_allowed_local_host_is_fetched_as_text_and_a_redirect_is_checked() -> None:
    async with site() as port:
        result = await fetcher("127.0.0.1").handle({"url": f"http://127.0.0.1:{port}/"})
        assert "# Status" in result.text and "All **green**." in result.text
        assert "x()" not in result.text and not result.is_error
        # an allowed host redirecting to a name that resolves to loopback: refused there
        with pytest.raises(ToolError, match="refused: localhost resolves to"):
            await fetcher("127.0.0.1").handle({"url": f"http://127.0.0.1:{port}/hop"})
        small = fetcher("127.0.0.1", max_bytes=1000)
        cut = await small.handle({"url": f"http://127.0.0.1:{port}/big"})
        assert "[only the first 1,000 bytes were read]" in cut.text


async def test_the_model_gets_refusals_as_error_text(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = caller
    settings = make_settings(tmp_path / "data", fake)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound('call web_fetch {"url": "http://169.254.169.254/"}'))
        await rec.wait_text("result ERROR: Error: refused: 169.254.169.254", 30)
    assert "web_fetch" in fake.calls[0].tool_names
    off = make_settings(tmp_path / "data2", fake, SWITCHBOARD_WEB_FETCH="off")
    rec = Recorder()
    async with running_app(off, [rec]) as app:
        app.human.accept(inbound("hello"))
        await rec.wait_text("ok", 30)
    assert "web_fetch" not in fake.calls[-1].tool_names
