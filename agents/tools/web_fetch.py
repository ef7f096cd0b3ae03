"""The built-in `web_fetch(url)` tool: a page as readable text, never a way inside.

Every hop (the URL, then each redirect, followed by hand) is resolved first and every
address it resolves to is checked: every address that is not globally routable
(loopback, private, link-local with the cloud metadata address 169.254.169.254,
shared 100.64.0.0/10, 6to4, site-local, IPv4 reached through IPv4-mapped or NAT64
IPv6) is refused unless the host is in SWITCHBOARD_FETCH_ALLOW_HOSTS. The connection then
goes to the checked address itself (Host header and TLS name kept), so a name that
resolves differently a moment later (DNS rebinding) cannot slip through. Size and time
are capped; HTML becomes text by bot.core.html_text (bounded, in a worker thread).
Certificates are checked against the system's CAs, or only those of SSL_CERT_FILE
when set (a corporate CA bundle; it replaces the system's, as it does for OpenSSL):
the environment is otherwise not trusted (no proxies from it).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from agents.mcp.results import marked
from agents.services import AgentInfo
from agents.tools.toolbox import STR, Tool, ToolError, ToolResult, ToolSpec, arg, schema
from bot.core.html_text import to_text
from bot.core.lazy import lazy

if TYPE_CHECKING:
    import httpx2
else:  # loaded with the model's SDK after the start, or at the first fetch
    httpx2 = lazy("httpx2")

MAX_REDIRECTS = 5
USER_AGENT = "Switchboard web_fetch (+https://github.com/)"
SPEC = ToolSpec(
    "web_fetch",
    "Fetch a web page (http or https) as readable text. Private and local addresses are refused.",
    schema({"url": arg(STR, "http(s) address")}),
)
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class FetchLimits:
    allow_hosts: frozenset[str]
    max_bytes: int
    timeout: float
    max_chars: int
    ca_file: str | None = None


def refused_address(ip: Address) -> str | None:
    """Why this address is not for web_fetch, or None: anything not globally routable
    (`is_global`), and the IPv6 forms that carry a local IPv4 address or that the
    standard library still counts as global (6to4, site-local)."""
    ip = _embedded(ip)
    for kind, flag in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("unspecified", ip.is_unspecified),
        ("private", ip.is_private),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("6to4", ip in _SIX_TO_FOUR),
        ("not globally routable", not ip.is_global),
    ):
        if flag:
            return kind
    return None


_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded(ip: Address) -> Address:
    """The IPv4 address an IPv4-mapped or well-known NAT64 IPv6 address reaches."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


async def resolve(host: str, port: int) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve {host}: {exc.strerror}") from exc
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


async def checked_address(host: str, port: int, limits: FetchLimits) -> Address:
    """The address to connect to: every address of the host checked, the first used."""
    addresses = await resolve(host, port)
    if not addresses:
        raise ToolError(f"{host} has no address")
    if host.lower() in limits.allow_hosts:
        return addresses[0]
    for ip in addresses:
        why = refused_address(ip)
        if why is not None:
            raise ToolError(
                f"refused: {host} resolves to {ip}, a {why} address "
                "(allow the host with SWITCHBOARD_FETCH_ALLOW_HOSTS)"
            )
    return addresses[0]


class WebFetch:
    def __init__(self, limits: FetchLimits) -> None:
        self.limits = limits

    @functools.cached_property
    def verify(self) -> ssl.SSLContext | bool:
        """Built once, at the first fetch: loading a CA bundle (SSL_CERT_FILE) costs ~50 ms
        of CPU, which a start spent before Slack connected."""
        ca_file = self.limits.ca_file
        return ssl.create_default_context(cafile=ca_file) if ca_file else True

    def tools(self, info: AgentInfo) -> list[Tool]:
        return [Tool(SPEC, self.handle)]

    async def handle(self, args: dict[str, Any]) -> ToolResult:
        try:
            async with asyncio.timeout(self.limits.timeout):
                return await self.fetch(args["url"])
        except TimeoutError as exc:
            raise ToolError(f"no complete answer within {self.limits.timeout:g} s") from exc
        except httpx2.HTTPError as exc:
            bad = _certificate_problem(exc)
            if bad is not None:
                raise ToolError(
                    f"refused: the TLS certificate of {bad[0]} is not valid: {bad[1]}"
                ) from exc
            raise ToolError(f"fetching failed: {type(exc).__name__}: {exc}") from exc

    async def fetch(self, url: str) -> ToolResult:
        async with httpx2.AsyncClient(
            follow_redirects=False, trust_env=False, verify=self.verify
        ) as client:
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._hop(client, url)
                location = response.headers.get("location")
                if response.is_redirect and location:
                    await response.aclose()
                    url = urljoin(url, location)
                    continue
                try:
                    body, complete = await self._read(response)
                finally:
                    await response.aclose()
                return await self._result(url, response, body, complete)
        raise ToolError(f"more than {MAX_REDIRECTS} redirects")

    async def _hop(self, client: httpx2.AsyncClient, url: str) -> httpx2.Response:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolError(f"not an http(s) URL: {url[:200]}")
        host = parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
        ip = await checked_address(host, port, self.limits)
        literal = f"[{ip}]" if ip.version == 6 else str(ip)
        pinned = urlunsplit(parts._replace(netloc=f"{literal}:{port}"))
        request = client.build_request(
            "GET",
            pinned,
            headers={"Host": parts.netloc.rsplit("@", 1)[-1], "User-Agent": USER_AGENT},
            extensions={"sni_hostname": host},
        )
        return await client.send(request, stream=True)

    async def _read(self, response: httpx2.Response) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= self.limits.max_bytes:
                return b"".join(chunks)[: self.limits.max_bytes], False
        return b"".join(chunks), True

    async def _result(
        self, url: str, response: httpx2.Response, body: bytes, complete: bool
    ) -> ToolResult:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        text = body.decode(response.encoding or "utf-8", errors="replace")
        if kind in ("text/html", "application/xhtml+xml"):
            text = await to_text(text)  # bounded, in a worker thread
        elif not (kind.startswith("text/") or kind.endswith(("json", "xml")) or not kind):
            text = f"({kind} content of {len(body):,} bytes, not shown)"
        head = f"{url} (HTTP {response.status_code})"
        if not complete:
            head += f" [only the first {self.limits.max_bytes:,} bytes were read]"
        page = marked(text.strip(), f"web page {url}", self.limits.max_chars)
        return ToolResult(f"{head}\n{page}", is_error=response.status_code >= 400)


def _certificate_problem(exc: httpx2.HTTPError) -> tuple[str, str] | None:
    """(host, why) when the failure was the server's certificate, else None."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    try:
        host = exc.request.headers.get("host", "the host")
    except RuntimeError:  # an error raised before any request was built
        host = "the host"
    return host, cause.verify_message or str(cause)
