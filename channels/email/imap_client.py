"""The IMAP session's commands, on aioimaplib, narrowed here once (nothing else sees it).

`ImapClient` logs in (TLS `ssl`, `starttls` or `none`), selects, searches, fetches,
marks \\Seen, NOOPs and idles; every error becomes `ImapError`. It also knows its own
connection: whether the socket is open and how long the server has been silent while
an answer is awaited (`problem`), which the watcher's health probe reads. An IDLE
lasts at most what the watcher asks; its DONE, like a NOOP, must be answered within
ANSWER_SECONDS, so a server that froze with the socket open is found out.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import aioimaplib

from channels.email import oauth_errors, sasl
from channels.email.oauth import Token, TokenSource, server_error
from channels.email.tls import client_context, port_for
from channels.errors import ChannelError
from config.settings import Settings

TIMEOUT_SECONDS = 30.0  # a command that moves data (login, SELECT, FETCH) at the most
ANSWER_SECONDS = 5.0  # the IDLE continuation, DONE's and NOOP's answers at the most
STALE_SECONDS = 10.0  # silent this long while an answer is awaited: the server is gone
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_UIDVALIDITY = re.compile(rb"\[UIDVALIDITY (\d+)\]")
_UIDNEXT = re.compile(rb"\[UIDNEXT (\d+)\]")

T = TypeVar("T")


class ImapError(ChannelError):
    """The session cannot go on: the server said no, went away or timed out."""


class _Protocol(aioimaplib.IMAP4ClientProtocol):
    """aioimaplib's protocol, noting when the server last sent anything and every
    `* n EXISTS` it sends.

    The server announces new mail inside the response of whatever command runs, and
    once announced, it is not announced again in the next IDLE. aioimaplib drops such
    lines during UID SEARCH/FETCH/STORE ("ignored untagged response"), so a mail that
    lands while the watcher syncs would wait for the next IDLE renewal. Noting them
    here lets the watcher sync again before it idles."""

    def __init__(self, loop: asyncio.AbstractEventLoop, conn_lost_cb: Callable[..., None]) -> None:
        super().__init__(loop, conn_lost_cb)
        self.news = False
        self.heard = loop.time()

    def data_received(self, d: bytes) -> None:
        self.heard = self.loop.time()
        super().data_received(d)

    def _untagged_response(self, line: bytes) -> aioimaplib.Command:
        if line.endswith(b" EXISTS"):
            self.news = True
        return super()._untagged_response(line)

    @aioimaplib.change_state
    async def authenticate(
        self, mechanism: str, initial: bytes, sasl_ir: bool
    ) -> tuple[aioimaplib.Response, list[bytes]]:
        """SASL with an initial response, every continuation answered (sasl.py)."""
        assert self.transport is not None
        command = sasl.Authenticate(
            self.new_tag(), mechanism, initial, sasl_ir, self.transport.write, self.loop,
            TIMEOUT_SECONDS,
        )  # fmt: skip
        response = await self.execute(command, scrub=initial.decode("ascii"))
        if response.result == "OK":
            self.state = aioimaplib.AUTH
        return response, command.challenges


class _Imap4(aioimaplib.IMAP4):
    protocol: _Protocol

    def create_client(
        self,
        host: str,
        port: int,
        loop: asyncio.AbstractEventLoop | None,
        conn_lost_cb: Callable[..., None],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        running = loop or asyncio.get_running_loop()
        self.protocol = _Protocol(running, conn_lost_cb)
        self._client_task = running.create_task(
            running.create_connection(lambda: self.protocol, host, port, ssl=ssl_context)
        )


class ImapClient:
    """The few IMAP commands the watcher needs, on aioimaplib, errors mapped to ImapError."""

    def __init__(
        self, settings: Settings, lost: asyncio.Event, tokens: TokenSource | None = None
    ) -> None:
        self.settings = settings
        self.tokens = tokens  # EMAIL_AUTH=oauth2: sign in with a token, not a password
        self.token: Token | None = None  # the token this session signed in with
        self.host = settings.imap_host or "localhost"
        self.tls = settings.imap_tls
        self.port = port_for("imap", self.tls, settings.imap_port)
        self.context = client_context(settings.email_tls_ca_file) if self.tls != "none" else None
        self.lost = lost
        self.imap: _Imap4 | None = None
        self.asking = 0  # commands under way: the server owes an answer
        self.asked_at = 0.0  # when the server began to owe one

    @property
    def _c(self) -> _Imap4:
        if self.imap is None:
            raise ImapError("not connected")
        return self.imap

    @property
    def news(self) -> bool:
        """Whether the server announced new mail since the flag was last cleared."""
        return self._c.protocol.news

    @news.setter
    def news(self, value: bool) -> None:
        self._c.protocol.news = value

    def problem(self) -> str | None:
        """What is wrong with the connection itself, or None: the socket closed or
        lost, or the server silent for STALE_SECONDS while it owes an answer."""
        protocol = self.imap.protocol if self.imap is not None else None
        transport = protocol.transport if protocol is not None else None
        if protocol is None or transport is None or transport.is_closing() or self.lost.is_set():
            return "the IMAP connection is closed"
        silent = protocol.loop.time() - max(protocol.heard, self.asked_at)
        if self.asking and silent > STALE_SECONDS:
            return f"the IMAP server has not answered for {silent:.0f}s"
        return None

    @contextlib.contextmanager
    def _asked(self) -> Iterator[None]:
        if not self.asking:
            self.asked_at = asyncio.get_running_loop().time()
        self.asking += 1
        try:
            yield
        finally:
            self.asking -= 1

    async def connect(self) -> None:
        await self.open()
        assert self.imap is not None
        with self._asked():
            if self.tokens is not None:
                await self._sign_in(self.tokens)
            else:
                user, password = self.settings.imap_user or "", self.settings.imap_password
                secret = password.get_secret_value() if password is not None else ""
                _ok(await self.imap.login(user, secret), f"login as {user}")
            await self.imap.protocol.capability()  # the list after login is the one that counts

    async def open(self) -> None:
        """The connection, greeted (and STARTTLS), not yet signed in."""
        self.imap = _Imap4(
            self.host,
            self.port,
            timeout=TIMEOUT_SECONDS,
            conn_lost_cb=lambda exc: self.lost.set(),
            ssl_context=self.context if self.tls == "ssl" else None,
        )
        with self._asked():
            await self.imap.wait_hello_from_server()
            if self.tls == "starttls":
                await self._starttls()

    @property
    def renew_at(self) -> float | None:
        """When this session's token should give way to a new one (wall clock); None
        for a password."""
        return self.token.renew_at if self.token is not None else None

    async def _sign_in(self, tokens: TokenSource) -> None:
        """AUTHENTICATE with a token; once more with a fresh one if it is refused (it
        may have been revoked or expired early), then a SignInError saying why."""
        protocol = self._c.protocol
        mechanism = sasl.choose(protocol.capabilities)
        if mechanism is None:
            offered = " ".join(sorted(c for c in protocol.capabilities if c.startswith("AUTH=")))
            raise oauth_errors.no_mechanism("IMAP", self.host, offered)
        user = self.settings.imap_user or self.settings.email_address or ""
        sasl_ir = "SASL-IR" in protocol.capabilities
        said, status = "", ""
        for _ in range(2):
            token = await tokens.token()
            initial = sasl.initial_response(mechanism, user, token.value)
            response, challenges = await protocol.authenticate(mechanism, initial, sasl_ir)
            if response.result == "OK":
                self.token = token
                return
            tokens.refused(token)
            said = f"{response.result} " + _last_line(response)
            status = next((server_error(c).get("status", "") for c in challenges), "")
        s = self.settings
        delegated = s.oauth_delegated
        raise oauth_errors.server_refused(
            "IMAP", user, s.email_oauth_provider, delegated, said.strip(), status
        )

    async def _starttls(self) -> None:
        protocol = self._c.protocol
        if "STARTTLS" not in protocol.capabilities:
            raise ImapError(f"{self.host} does not offer STARTTLS (IMAP_TLS=starttls)")
        command = aioimaplib.Command("STARTTLS", protocol.new_tag(), loop=protocol.loop)
        _ok(await asyncio.wait_for(protocol.execute(command), TIMEOUT_SECONDS), "STARTTLS")
        loop = asyncio.get_running_loop()
        assert self.context is not None
        protocol.transport = await loop.start_tls(
            protocol.transport, protocol, self.context, server_hostname=self.host
        )
        await protocol.capability()  # never trust what was said before TLS

    @property
    def has_idle(self) -> bool:
        return self._c.has_capability("IDLE")

    async def select(self, mailbox: str) -> tuple[int, int | None]:
        """SELECT; (UIDVALIDITY, UIDNEXT)."""
        with self._asked():
            response = await self._c.select(mailbox)
        if (
            response.result != "OK"
            and self.token is not None
            and b"not connected" in (_last_line(response).encode().lower())
        ):  # Microsoft: signed in, yet the app has no right to this mailbox
            user = self.settings.imap_user or self.settings.email_address or ""
            raise oauth_errors.not_connected("IMAP", user, _last_line(response))
        _ok(response, f"SELECT {mailbox}")
        lines = b" ".join(bytes(line) for line in response.lines)
        validity = _UIDVALIDITY.search(lines)
        if validity is None:
            raise ImapError(f"{mailbox}: the server sent no UIDVALIDITY")
        uidnext = _UIDNEXT.search(lines)
        return int(validity.group(1)), int(uidnext.group(1)) if uidnext else None

    async def search(self, *criteria: str) -> list[int]:
        with self._asked():
            response = _ok(await self._c.uid_search(*criteria, charset=None), "UID SEARCH")
        uids: list[int] = []
        for line in response.lines[:-1]:
            uids.extend(int(part) for part in bytes(line).split() if part.isdigit())
        return sorted(set(uids))

    async def fetch(self, uid: int, max_bytes: int) -> tuple[bytes, int] | None:
        """The first `max_bytes` of a mail and its full size; None if it is gone."""
        with self._asked():
            parts = f"(RFC822.SIZE BODY.PEEK[]<0.{max_bytes}>)"
            response = _ok(await self._c.uid("fetch", str(uid), parts), f"UID FETCH {uid}")
        raw: bytes | None = None
        size = 0
        for line in response.lines:
            if isinstance(line, bytearray) and raw is None:
                raw = bytes(line)
            elif (match := _SIZE.search(bytes(line))) is not None:
                size = int(match.group(1))
        return None if raw is None else (raw, max(size, len(raw)))

    async def mark_seen(self, uid: int) -> None:
        with self._asked():
            response = await self._c.uid("store", str(uid), "+FLAGS.SILENT", r"(\Seen)")
        _ok(response, f"STORE {uid}")

    async def noop(self) -> None:
        if self.lost.is_set():
            raise ImapError("connection lost")
        with self._asked():
            _ok(await _answer(self._c.noop(), "NOOP"), "NOOP")

    async def idle(self, seconds: float) -> list[bytes]:
        """Wait in IDLE for the server's news, at most `seconds`; [] when nothing came.
        The IDLE's continuation and DONE's answer must come within ANSWER_SECONDS."""
        client = self._c
        with self._asked():
            idle = await _answer(client.idle_start(timeout=seconds), "IDLE")
            push = await race(client.wait_server_push(timeout=seconds + ANSWER_SECONDS), self.lost)
            if self.lost.is_set():
                raise ImapError("connection lost during IDLE")
            lines = [bytes(line) for line in push] if isinstance(push, list) else []
            if any(line.startswith(b"BYE") for line in lines):
                raise ImapError("the server closed the connection (BYE)")
            client.idle_done()
            await _answer(idle, "DONE")
        return lines

    async def close(self) -> None:
        imap, self.imap = self.imap, None
        if imap is None:
            return
        try:
            if not self.lost.is_set() and not imap.has_pending_idle():
                await asyncio.wait_for(imap.logout(), 2)
        except Exception:  # going away anyway
            pass
        transport = imap.protocol.transport
        if transport is not None:
            transport.close()


async def _answer(awaitable: Awaitable[T], what: str) -> T:
    """The server's answer to `what` within ANSWER_SECONDS, else ImapError."""
    try:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the answer when a
        # cancellation arrives with it, and the cancelled IMAP task then idles on
        async with asyncio.timeout(ANSWER_SECONDS):
            return await awaitable
    except TimeoutError:
        raise ImapError(f"{what}: no answer from the server in {ANSWER_SECONDS:g}s") from None


async def race(coro: Awaitable[T], lost: asyncio.Event) -> T | None:
    """The result of `coro`, or None as soon as the connection is lost."""
    task = asyncio.ensure_future(coro)
    gone = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
    return task.result() if task.done() and not task.cancelled() else None


def _last_line(response: aioimaplib.Response) -> str:
    return b" ".join(bytes(x) for x in response.lines[-1:]).decode(errors="replace")


def _ok(response: aioimaplib.Response, what: str) -> aioimaplib.Response:
    if response.result != "OK":
        raise ImapError(f"{what}: {response.result} {_last_line(response)}".strip())
    return response
