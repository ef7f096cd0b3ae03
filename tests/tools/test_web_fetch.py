"""web_fetch: pages as text; loopback, private and link-local addresses refused at
every hop, after DNS resolution, unless the host is allowed."""

from __future__ import annotations

import contextlib
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from agents.tools import web_fetch
from agents.tools.toolbox import ToolError
from agents.tools.web_fetch import FetchLimits, WebFetch
from config.settings import SettingsError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app
from tests.kits.loop_kit import turns
from tests.kits.tools_kit import caller, free_port

NESTED = "<ul><li>x" * 10_500 + "</li></ul>" * 10_500  # 200 KB of nested lists
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

    async def nested(request: web.Request) -> web.Response:
        return web.Response(text=NESTED, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/hop", to_localhost)
    app.router.add_get("/big", big)
    app.router.add_get("/nested", nested)
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
        ("http://100.64.0.1/", "100.64.0.1, a not globally routable address"),
        ("http://[2002:7f00:1::]/", "2002:7f00:1::, a 6to4 address"),
        ("http://[fec0::1]/", "fec0::1, a site-local address"),
        ("http://[::ffff:10.0.0.1]/", "::ffff:a00:1, a private address"),
        ("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1, a loopback address"),
        ("http://[64:ff9b:1::1]/", "64:ff9b:1::1, a reserved address"),
        ("http://192.0.2.1/", "192.0.2.1, a"),
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


@contextlib.asynccontextmanager
async def tls_site(tmp_path: Path, *names: str) -> AsyncIterator[tuple[int, str]]:
    """An HTTPS site on 127.0.0.1 whose certificate (from a throwaway CA) names only
    `names`; yields its port and the CA file a client must trust."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    port = free_port()

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=f"<p>host {request.host}</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        yield port, str(ca_file)
    finally:
        await runner.cleanup()


def pinned_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """`intranet.test` resolves (for web_fetch only) to 127.0.0.1: no system resolver
    knows it, so a connection can only reach the site through the checked address."""

    async def resolve(host: str, port: int) -> list[ipaddress.IPv4Address]:
        assert host == "intranet.test"
        return [ipaddress.IPv4Address("127.0.0.1")]

    monkeypatch.setattr(web_fetch, "resolve", resolve)


async def test_https_goes_to_the_checked_address_and_checks_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned_to_loopback(monkeypatch)
    async with tls_site(tmp_path, "intranet.test") as (port, ca_file):
        fetch = WebFetch(FetchLimits(frozenset({"intranet.test"}), 100_000, 5.0, 20_000, ca_file))
        assert "verify" not in vars(fetch)  # the CA bundle loads at the first fetch, not at start
        result = await fetch.handle({"url": f"https://intranet.test:{port}/"})
        assert f"host intranet.test:{port}" in result.text and not result.is_error
        assert isinstance(vars(fetch)["verify"], ssl.SSLContext)  # then kept
        # without the private CA the same certificate is not trusted
        untrusted = WebFetch(FetchLimits(frozenset({"intranet.test"}), 100_000, 5.0, 20_000))
        with pytest.raises(ToolError, match=r"refused: the TLS certificate of intranet\.test"):
            await untrusted.handle({"url": f"https://intranet.test:{port}/"})


async def test_a_certificate_for_another_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned_to_loopback(monkeypatch)
    # valid for the address actually dialled, but not for the name asked for
    async with tls_site(tmp_path, "other.test", "127.0.0.1") as (port, ca_file):
        fetch = WebFetch(FetchLimits(frozenset({"intranet.test"}), 100_000, 5.0, 20_000, ca_file))
        with pytest.raises(
            ToolError,
            match=rf"refused: the TLS certificate of intranet.test:{port} is not valid: "
            "Hostname mismatch",
        ):
            await fetch.handle({"url": f"https://intranet.test:{port}/"})


async def test_ssl_cert_file_reaches_web_fetch_and_a_missing_file_is_one_line(
    tmp_path: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned_to_loopback(monkeypatch)
    fake.responder = caller
    async with tls_site(tmp_path, "intranet.test") as (port, ca_file):
        settings = make_settings(
            tmp_path / "data", fake,
            SSL_CERT_FILE=ca_file, SWITCHBOARD_FETCH_ALLOW_HOSTS="intranet.test",
        )  # fmt: skip
        rec = Recorder()
        async with running_app(settings, [rec]) as app:
            line = f'call web_fetch {{"url": "https://intranet.test:{port}/"}}'
            app.human.accept(inbound(line))
            await rec.wait_text(f"host intranet.test:{port}", 30)
    with pytest.raises(SettingsError, match=r"^SSL_CERT_FILE: is not a readable file of CA"):
        make_settings(tmp_path / "data3", fake, SSL_CERT_FILE=str(tmp_path / "nope.pem"))


async def test_a_nested_list_page_is_converted_off_the_loop_and_bounded() -> None:
    async with site() as port, turns() as during:
        result = await fetcher("127.0.0.1").handle({"url": f"http://127.0.0.1:{port}/nested"})
    assert during.count > 10 and "* x" in result.text and len(result.text) <= 20_400
