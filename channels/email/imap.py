"""The IMAP watcher: one session at a time, IDLE (or polling), reconnect, durable UIDs.

The watcher keeps one session (`ImapClient`, imap_client.py): it logs in, selects
the mailbox, hands every new mail to `handle(raw, size)` in UID order, then marks it
\\Seen and stores its UID (kv `email:imap:state`, with the UIDVALIDITY). `handle`
journals or refuses the mail before it returns, so a crash anywhere repeats at most
a mail the journal already knows. Then it waits for news in IDLE, or polls every
IMAP_POLL_SECONDS when the server lacks IDLE, and syncs at the latest every
IMAP_IDLE_SECONDS. Either wait is cut in pieces of CHECK_SECONDS, each ending in an
answer the server owes in ANSWER_SECONDS (DONE, NOOP): a server gone silent ends the
session instead of being waited on, and `probe()` tells the channel's health from
the connection itself. Any error or drop ends the session;
the next starts after an exponential backoff with jitter, which starts over only once
a session has caught up. A mail whose handling fails is set aside (logged, an event,
marked \\Seen and passed), never fetched again and again.

With EMAIL_AUTH=oauth2 a session signs in with an access token (TokenSource, oauth.py);
shortly before that token is due for renewal the session ends, after its last sync,
and the next one signs in at once with a fresh token: the UIDs carry on, so no mail is
lost or handled twice (a server's BYE or NO on an expired token ends a session the
same way, through the backoff). A sign-in a person must fix (a refused token, a
missing consent, a revoked refresh token) is state `signin-failed` with the one line
that says what to do, logged, and tried again with backoff; "connected again" is
logged once it works.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aioimaplib

from bot.seam import ChannelStore, EventLog, backoff
from channels.email.imap_client import ImapClient, ImapError, race
from channels.email.oauth import SignInError, TokenSource
from config.settings import Settings

log = logging.getLogger(__name__)

STATE_KEY = "email:imap:state"
CHECK_SECONDS = 7.0  # an IDLE or a poll's wait ends this often to hear the server answer
RECONNECT_BASE_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 60.0

Handler = Callable[[bytes, int], Awaitable[None]]
Health = Callable[[str, str], None]
Step = Callable[[ImapClient, float], Awaitable[None]]


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


class ImapWatcher:
    """Runs IMAP sessions forever, reconnecting with backoff after any failure."""

    def __init__(
        self,
        settings: Settings,
        store: ChannelStore,
        events: EventLog,
        handle: Handler,
        health: Health,
        tokens: TokenSource | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.events = events
        self.handle = handle
        self.health = health
        self.tokens = tokens
        self.renewals = 0  # sessions ended to sign in with a fresh token
        self.renewing = False
        self.mailbox = settings.imap_mailbox
        self.idles = 0  # IDLE commands issued: renewals show here
        self.caught_up = False  # the current session has handled the mail it found
        self.client: ImapClient | None = None
        self.state = ("connecting", f"{settings.imap_host} as {settings.imap_user}")

    async def run(self) -> None:
        attempt = 0
        while True:
            client = ImapClient(self.settings, asyncio.Event(), self.tokens)
            if not self.renewing:
                self.client = client
            self.caught_up = False
            try:
                await client.connect()
                self.client, self.renewing = client, False
                await self._session(client)
                self.renewing = True  # the token is due: a new session, at once
                self.renewals += 1
                attempt = 0
            except asyncio.CancelledError:
                raise
            except (ImapError, SignInError, aioimaplib.AioImapException, OSError,
                    TimeoutError) as exc:  # fmt: skip
                attempt = await self._pause(attempt, exc)
            except Exception as exc:  # a bug must not end the channel: log it, retry
                log.exception("IMAP session failed")
                attempt = await self._pause(attempt, exc)
            finally:
                await client.close()

    async def probe(self) -> tuple[str, str]:
        """The session's state, from the connection itself while it counts as connected:
        a closed socket, or a server silent while it owes an answer, is not connected."""
        client = self.client
        counts = client is not None and self.state[0] == "connected" and not self.renewing
        problem = client.problem() if counts and client is not None else None
        return ("reconnecting", problem) if problem else self.state

    def _set(self, state: str, detail: str) -> None:
        self.state = (state, detail)
        self.health(state, detail)

    async def _pause(self, attempt: int, exc: BaseException) -> int:
        """Wait before the next session; the next attempt's number."""
        if self.caught_up:  # a session that worked: the next failure is a fresh one
            attempt = 0
        self.renewing = False
        delay = backoff(attempt, RECONNECT_BASE_SECONDS, RECONNECT_MAX_SECONDS)
        if isinstance(exc, SignInError):
            state = "signin-failed" if exc.needs_person else "reconnecting"
            error = f"email sign-in failed: {exc.line}"
            log.log(logging.ERROR if exc.needs_person else logging.WARNING,
                    "%s (trying again in %.0fs)", error, delay)  # fmt: skip
        else:
            state, error = "reconnecting", f"{type(exc).__name__}: {exc}"
        self._set(state, error)
        self.events.emit("channel.reconnecting", "email", error=error, delay=round(delay, 3))
        await asyncio.sleep(delay)
        return attempt + 1

    async def _session(self, client: ImapClient) -> None:
        validity, uidnext = await client.select(self.mailbox)
        state = await self._catch_up(client, validity, uidnext)
        self.caught_up = True
        mode = "IDLE" if client.has_idle else f"polling every {self.settings.imap_poll_seconds:g}s"
        if self.state[0] != "connected":
            if self.state[0] != "connecting":
                log.info("email: connected again (%s %s)", client.host, mode)
            self._set("connected", f"{client.host}:{client.port} {self.mailbox} ({mode})")
            self.events.emit("channel.connected", "email", mode=mode)
        while True:
            if client.has_idle:
                await self._wait(client, self.settings.imap_idle_seconds, self._idle)
            else:
                await self._wait(client, self.settings.imap_poll_seconds, self._poll)
            await self._sync(client, state)
            if _until_renewal(client) <= 0:
                return  # after the last sync: the next session signs in afresh

    async def _wait(self, client: ImapClient, seconds: float, step: Step) -> None:
        """Until the server announces mail or `seconds` pass, `step` in pieces of at
        most CHECK_SECONDS, each ending in an answer the server owes within
        ANSWER_SECONDS: a dead or frozen server is found out, not waited on."""
        loop = asyncio.get_running_loop()
        due = loop.time() + seconds
        while not client.news and (left := due - loop.time()) > 0:
            if (renewal := _until_renewal(client)) <= 0:
                return
            await step(client, min(left, CHECK_SECONDS, renewal))

    async def _idle(self, client: ImapClient, seconds: float) -> None:
        self.idles += 1
        await client.idle(seconds)

    async def _poll(self, client: ImapClient, seconds: float) -> None:
        await race(asyncio.sleep(seconds), client.lost)
        await client.noop()

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


def _until_renewal(client: ImapClient) -> float:
    """Seconds until the session's token is due for renewal (inf with a password)."""
    return float("inf") if client.renew_at is None else client.renew_at - time.time()
