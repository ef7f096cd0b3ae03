"""The IMAP connection: login, SELECT, IDLE (or polling), reconnect, durable UIDs.

aioimaplib is narrowed here, once (`ImapClient`); nothing else sees it. The watcher
keeps one session: it logs in (TLS `ssl`, `starttls` or `none`), selects the
mailbox, hands every new mail to `handle(raw, size)` in UID order, then marks it
\\Seen and stores its UID (kv `email:imap:state`, with the UIDVALIDITY). `handle`
journals or refuses the mail before it returns, so a crash anywhere repeats at most
a mail the journal already knows. Then it waits in IDLE, re-issued every
IMAP_IDLE_SECONDS (servers drop an IDLE after 29 minutes), or polls every
IMAP_POLL_SECONDS when the server lacks IDLE. Any error or drop ends the session;
the next starts after an exponential backoff with jitter, which starts over only once
a session has caught up. A mail whose handling fails is set aside (logged, an event,
marked \\Seen and passed), never fetched again and again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import aioimaplib

from bot.channel import ChannelStore
from bot.events import EventLog
from bot.outbox import backoff
from channels.email.tls import client_context, port_for
from config.settings import Settings

log = logging.getLogger(__name__)

STATE_KEY = "email:imap:state"
TIMEOUT_SECONDS = 30.0
RECONNECT_BASE_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 60.0
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_UIDVALIDITY = re.compile(rb"\[UIDVALIDITY (\d+)\]")
_UIDNEXT = re.compile(rb"\[UIDNEXT (\d+)\]")

T = TypeVar("T")
Handler = Callable[[bytes, int], Awaitable[None]]
Health = Callable[[str, str], None]


class ImapError(Exception):
    """The session cannot go on: the server said no, went away or timed out."""


@dataclass(slots=True)
class UidState:
    uidvalidity: int | None = None
    last_uid: int = 0

    @classmethod
    def load(cls, store: ChannelStore) -> UidState:
        raw = store.get_kv(STATE_KEY)
        try:
            data = json.loads(raw) if raw else {}
            return cls(data.get("uidvalidity"), int(data.get("last_uid", 0)))
        except (ValueError, TypeError, AttributeError):
            log.error("email IMAP state %r is corrupt; starting from unread mail", raw)
            return cls()

    def save(self, store: ChannelStore) -> None:
        store.set_kv(
            STATE_KEY, json.dumps({"uidvalidity": self.uidvalidity, "last_uid": self.last_uid})
        )


class _Protocol(aioimaplib.IMAP4ClientProtocol):
    """aioimaplib's protocol, noting every `* n EXISTS` the server sends.

    The server announces new mail inside the response of whatever command runs, and
    once announced, it is not announced again in the next IDLE. aioimaplib drops such
    lines during UID SEARCH/FETCH/STORE ("ignored untagged response"), so a mail that
    lands while the watcher syncs would wait for the next IDLE renewal. Noting them
    here lets the watcher sync again before it idles."""

    def __init__(self, loop: asyncio.AbstractEventLoop, conn_lost_cb: Callable[..., None]) -> None:
        super().__init__(loop, conn_lost_cb)
        self.news = False

    def _untagged_response(self, line: bytes) -> aioimaplib.Command:
        if line.endswith(b" EXISTS"):
            self.news = True
        return super()._untagged_response(line)


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

    def __init__(self, settings: Settings, lost: asyncio.Event) -> None:
        self.settings = settings
        self.host = settings.imap_host or "localhost"
        self.tls = settings.imap_tls
        self.port = port_for("imap", self.tls, settings.imap_port)
        self.context = client_context(settings.email_tls_ca_file) if self.tls != "none" else None
        self.lost = lost
        self.imap: _Imap4 | None = None

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

    async def connect(self) -> None:
        self.imap = _Imap4(
            self.host,
            self.port,
            timeout=TIMEOUT_SECONDS,
            conn_lost_cb=lambda exc: self.lost.set(),
            ssl_context=self.context if self.tls == "ssl" else None,
        )
        await self.imap.wait_hello_from_server()
        if self.tls == "starttls":
            await self._starttls()
        user, password = self.settings.imap_user or "", self.settings.imap_password
        secret = password.get_secret_value() if password is not None else ""
        _ok(await self.imap.login(user, secret), f"login as {user}")
        await self.imap.protocol.capability()  # the list after login is the one that counts

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
        response = _ok(await self._c.select(mailbox), f"SELECT {mailbox}")
        lines = b" ".join(bytes(line) for line in response.lines)
        validity = _UIDVALIDITY.search(lines)
        if validity is None:
            raise ImapError(f"{mailbox}: the server sent no UIDVALIDITY")
        uidnext = _UIDNEXT.search(lines)
        return int(validity.group(1)), int(uidnext.group(1)) if uidnext else None

    async def search(self, *criteria: str) -> list[int]:
        response = _ok(await self._c.uid_search(*criteria, charset=None), "UID SEARCH")
        uids: list[int] = []
        for line in response.lines[:-1]:
            uids.extend(int(part) for part in bytes(line).split() if part.isdigit())
        return sorted(set(uids))

    async def fetch(self, uid: int, max_bytes: int) -> tuple[bytes, int] | None:
        """The first `max_bytes` of a mail and its full size; None if it is gone."""
        response = await self._c.uid("fetch", str(uid), f"(RFC822.SIZE BODY.PEEK[]<0.{max_bytes}>)")
        _ok(response, f"UID FETCH {uid}")
        raw: bytes | None = None
        size = 0
        for line in response.lines:
            if isinstance(line, bytearray) and raw is None:
                raw = bytes(line)
            elif (match := _SIZE.search(bytes(line))) is not None:
                size = int(match.group(1))
        return None if raw is None else (raw, max(size, len(raw)))

    async def mark_seen(self, uid: int) -> None:
        response = await self._c.uid("store", str(uid), "+FLAGS.SILENT", r"(\Seen)")
        _ok(response, f"STORE {uid}")

    async def noop(self) -> None:
        _ok(await self._c.noop(), "NOOP")

    async def idle(self, seconds: float) -> list[bytes]:
        """Wait in IDLE for the server's news, at most `seconds`; [] when nothing came."""
        client = self._c
        idle = await client.idle_start(timeout=seconds)
        push = await _race(client.wait_server_push(timeout=seconds + TIMEOUT_SECONDS), self.lost)
        if self.lost.is_set():
            raise ImapError("connection lost during IDLE")
        lines = [bytes(line) for line in push] if isinstance(push, list) else []
        if any(line.startswith(b"BYE") for line in lines):
            raise ImapError("the server closed the connection (BYE)")
        client.idle_done()
        await asyncio.wait_for(idle, TIMEOUT_SECONDS)
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


async def _race(coro: Awaitable[T], lost: asyncio.Event) -> T | None:
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


def _ok(response: aioimaplib.Response, what: str) -> aioimaplib.Response:
    if response.result != "OK":
        detail = b" ".join(bytes(x) for x in response.lines[-1:]).decode(errors="replace")
        raise ImapError(f"{what}: {response.result} {detail}".strip())
    return response


class ImapWatcher:
    """Runs IMAP sessions forever, reconnecting with backoff after any failure."""

    def __init__(
        self,
        settings: Settings,
        store: ChannelStore,
        events: EventLog,
        handle: Handler,
        health: Health,
    ) -> None:
        self.settings = settings
        self.store = store
        self.events = events
        self.handle = handle
        self.health = health
        self.mailbox = settings.imap_mailbox
        self.idles = 0  # IDLE commands issued: renewals show here
        self.caught_up = False  # the current session has handled the mail it found

    async def run(self) -> None:
        attempt = 0
        while True:
            lost = asyncio.Event()
            client = ImapClient(self.settings, lost)
            self.caught_up = False
            try:
                await client.connect()
                await self._session(client)
            except asyncio.CancelledError:
                raise
            except (ImapError, aioimaplib.AioImapException, OSError, TimeoutError) as exc:
                attempt = await self._pause(attempt, exc)
            except Exception as exc:  # a bug must not end the channel: log it, retry
                log.exception("IMAP session failed")
                attempt = await self._pause(attempt, exc)
            finally:
                await client.close()

    async def _pause(self, attempt: int, exc: BaseException) -> int:
        """Wait before the next session; the next attempt's number."""
        if self.caught_up:  # a session that worked: the next failure is a fresh one
            attempt = 0
        delay = backoff(attempt, RECONNECT_BASE_SECONDS, RECONNECT_MAX_SECONDS)
        error = f"{type(exc).__name__}: {exc}"
        self.health("reconnecting", error)
        self.events.emit("channel.reconnecting", "email", error=error, delay=round(delay, 3))
        await asyncio.sleep(delay)
        return attempt + 1

    async def _session(self, client: ImapClient) -> None:
        validity, uidnext = await client.select(self.mailbox)
        state = await self._catch_up(client, validity, uidnext)
        self.caught_up = True
        mode = "IDLE" if client.has_idle else f"polling every {self.settings.imap_poll_seconds:g}s"
        self.health("connected", f"{client.host}:{client.port} {self.mailbox} ({mode})")
        self.events.emit("channel.connected", "email", mode=mode)
        while True:
            if client.has_idle:
                self.idles += 1
                await client.idle(self.settings.imap_idle_seconds)
            else:
                await _race(asyncio.sleep(self.settings.imap_poll_seconds), client.lost)
                await client.noop()
            await self._sync(client, state)

    async def _catch_up(self, client: ImapClient, validity: int, uidnext: int | None) -> UidState:
        """On a first start or a new UIDVALIDITY, stored UIDs mean nothing: handle the
        unread mail (the journal drops any seen before), then follow UIDs from there."""
        state = UidState.load(self.store)
        if state.uidvalidity == validity:
            await self._sync(client, state)
            return state
        if state.uidvalidity is not None:
            self.events.emit("channel.uidvalidity", "email", old=state.uidvalidity, new=validity)
        baseline = uidnext - 1 if uidnext else max(await client.search("ALL"), default=0)
        for uid in await client.search("UNSEEN"):
            if uid <= baseline:
                await self._one(client, uid)
        state = UidState(validity, baseline)
        state.save(self.store)
        await self._sync(client, state)
        return state

    async def _sync(self, client: ImapClient, state: UidState) -> None:
        """Handle every mail after the last UID; again while the server announced more."""
        client.news = True
        while client.news:
            client.news = False
            for uid in await client.search("UID", f"{state.last_uid + 1}:*"):
                if uid > state.last_uid:  # "N:*" also names the newest mail when none is newer
                    await self._one(client, uid)
                    state.last_uid = uid
                    state.save(self.store)

    async def _one(self, client: ImapClient, uid: int) -> None:
        fetched = await client.fetch(uid, self.settings.email_max_bytes)
        if fetched is not None:
            raw, size = fetched
            try:
                await self.handle(raw, size)  # journaled (or refused) before marked \Seen
            except Exception as exc:  # a bug on one mail: set it aside, go on
                log.exception("email UID %d could not be handled; set aside", uid)
                self.events.emit("message.quarantined", "email", uid=uid, error=repr(exc)[:300])
            await client.mark_seen(uid)
