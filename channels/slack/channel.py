"""The Slack channel: wires identity, events, posting and the connection together.

It is what the outbox and the app see (`kind`, `pace_seconds`, `pace_key`, `start`,
`stop`, `deliver`). Starting never blocks the app: it asks `auth.test` who the bot
is (retrying with backoff while Slack is unreachable), then opens the connection.
A token Slack refuses stops the channel with its health `failed`, naming the
variable, and leaves the other channels running.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import (
    BaseChannel,
    ChannelContext,
    DeliveryReceipt,
    Outbound,
    Page,
    Target,
    backoff,
    cancel_all,
)
from channels.slack import approvals, home
from channels.slack.catchup import SlackCatchUp
from channels.slack.connection import HttpConnection, SocketModeConnection, build_app
from channels.slack.events import SlackEvents
from channels.slack.files import SlackFetcher
from channels.slack.identity import BotIdentity, whoami
from channels.slack.live import SlackLives
from channels.slack.members import SlackMembers
from channels.slack.people import EmailLinks
from channels.slack.post import SlackPoster, pace_key
from channels.slack.progress import SlackProgress
from channels.slack.reading import SlackReader
from channels.slack.threads import ThreadMemory
from config.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

#: auth.test answers that retrying cannot fix
REFUSED_TOKEN = {
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_allowed_token_type",
}
CONNECT_BACKOFF_CAP = 60.0


class SlackChannel(BaseChannel):
    kind = "slack"

    def __init__(self, settings: Settings, ctx: ChannelContext) -> None:
        assert settings.slack_bot_token is not None  # checked by Settings
        self.ctx = ctx
        self.pace_seconds = settings.slack_pace_seconds
        token = settings.slack_bot_token.get_secret_value()
        self.client = AsyncWebClient(token=token, base_url=settings.slack_api_url)
        #: posts and uploads: the SDK's own retry of a broken connection would repeat a
        #: chat.postMessage Slack received, blind; the outbox retries instead, through
        #: the attempt records (post.py). Reads keep the SDK's retry (self.client).
        self.post_client = AsyncWebClient(
            token=token, base_url=settings.slack_api_url, retry_handlers=[]
        )
        self.threads = ThreadMemory(ctx.store)
        self.links = EmailLinks(self.client, ctx.people)
        self.events = SlackEvents(
            ctx, self.threads, settings.slack_allowed_users, self.links.email_of
        )
        self.catchup = SlackCatchUp(
            self.client, ctx.store, self.events, self.threads, self.links.prepare
        )
        self.events.journaled = self.catchup.journaled
        self._catching_up: asyncio.Task[None] | None = None
        self.lives = SlackLives(self.post_client, ctx.store, self._identity, self.client)
        self.poster = SlackPoster(
            self.post_client,
            ctx.store,
            ctx.pacer,
            self.pace_seconds,
            settings.data_dir,
            reader=self.client,
            lives=self.lives,
        )
        self.slack_progress = SlackProgress(self.client, self.lives)
        self.progress = self.slack_progress
        self.reader = SlackReader(self.client)
        self.membership = SlackMembers(self.client)
        self.fetcher = SlackFetcher(settings.slack_bot_token.get_secret_value(), self.client)
        if ctx.intake is not None:
            ctx.intake.register(self.kind, self.fetcher)
        self.connection = self._connection(settings)
        #: HTTP Events mode: the route the app mounts on its HTTP server
        self.http_routes = (
            self.connection.routes if isinstance(self.connection, HttpConnection) else ()
        )
        self.ready = asyncio.Event()
        self._starting: asyncio.Task[None] | None = None
        #: one connection pool for every Web API call, opened in start(): without it
        #: slack_sdk opens a session, a TCP (and TLS) connection, per call
        self._session: aiohttp.ClientSession | None = None

    def _connection(self, settings: Settings) -> SocketModeConnection | HttpConnection:
        app_token, secret = settings.slack_app_token, settings.slack_signing_secret
        assert app_token is not None or secret is not None  # Settings require one of the two
        signing = None if app_token is not None or secret is None else secret.get_secret_value()
        allowed = settings.slack_allowed_users
        app = build_app(
            self.client, self.events.dispatch, signing, self._identity, self.links.prepare,
            before=lambda a: home.register(a, self.client, self.ctx, allowed),
        )  # fmt: skip
        approvals.register(app, self.client, self.ctx.decide, settings.slack_allowed_users)
        if app_token is not None:
            return SocketModeConnection(
                app, app_token.get_secret_value(), self._health, self._connected
            )
        return HttpConnection(
            app, settings.http_host, settings.listen_port, self._health, self._malformed
        )

    # -- the Channel protocol ----------------------------------------------------------
    def pace_key(self, target: Target) -> str:
        return pace_key(target)

    async def start(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self.client.timeout)  # as slack_sdk's own
        self._session = aiohttp.ClientSession(timeout=timeout)
        self.client.session = self.post_client.session = self._session
        self._health("connecting", self.connection.describe)
        self._starting = asyncio.create_task(self._connect(), name="slack-connect")

    async def stop(self) -> None:
        await cancel_all(task for task in (self._starting, self._catching_up) if task is not None)
        if self.ready.is_set():
            await self.connection.stop()
        await self.fetcher.close()
        await self.poster.uploader.close()
        if self._session is not None:
            await self._session.close()
        self._health("stopped", "")

    async def probe(self) -> tuple[str, str] | None:
        """The connection's own state (health), once connected; None: nothing to add."""
        if not self.ready.is_set() or not isinstance(self.connection, SocketModeConnection):
            return None
        return await self.connection.probe()

    async def read_history(self, target: Target, since: float | None, limit: int) -> Page:
        return await self.reader.read_history(target, since, limit)

    async def can_read(self, user_id: str, target: Target) -> bool | None:
        return await self.membership.can_read(user_id, target)

    async def can_post(self, user_id: str, target: Target) -> bool | None:
        return await self.membership.can_post(user_id, target)

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        identity = self.events.identity
        if msg.meta.get("edit_only"):  # a late edit of an approval request, nothing posted
            await approvals.edit_request(self.client, msg, msg.target.address)
            return DeliveryReceipt()
        receipt = await self.poster.deliver(msg, identity is not None and identity.can_customize)
        if msg.meta.get("edit"):  # a decision: the request message shows it too
            channel = Target.parse(receipt.refs[0]).address if receipt.refs else msg.target.address
            await approvals.edit_request(self.client, msg, channel)
        if msg.kind == "question" and receipt.thread:
            await self._waiting(Target(self.kind, msg.target.address, receipt.thread), msg)
        for ref in receipt.refs:  # replies in these threads reach the bot without a mention
            target = Target.parse(ref)
            self.threads.remember(target.address, target.thread or "")
            self.slack_progress.posted(target.address, target.thread)
            if target.thread:
                self.catchup.posted_in(target.address, target.thread)
        return receipt

    async def _waiting(self, thread: Target, msg: Outbound) -> None:
        """A parked worker's question: the thread's agent session shows it waits."""
        try:
            await self.slack_progress.suspended(thread, f"{msg.agent} waits for an answer")
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("Slack: the session of %s not marked waiting: %s", thread, exc)

    # -- start-up ----------------------------------------------------------------------
    async def _connect(self) -> None:
        identity = await self._patiently(lambda: whoami(self.client), "SLACK_BOT_TOKEN")
        if identity is None:
            return
        self.events.identity = identity
        if not await self._patiently(self._open, "SLACK_APP_TOKEN"):
            return
        self.ready.set()
        log.info("Slack: %s as @%s (%s)", self.connection.describe, identity.name, identity.team_id)
        if isinstance(self.connection, HttpConnection):
            self._connected()  # Socket Mode catches up at each socket's hello instead

    # -- catching up -------------------------------------------------------------------
    def _connected(self) -> None:
        """A new connection: read back what was said while none was open."""
        if self._catching_up is not None:
            self._catching_up.cancel()  # its marks stay where they were: read again
        # at once: no live message moves a mark until the catch-up has its list
        self.catchup.marks.new_session()
        self._catching_up = asyncio.create_task(self._catch_up(), name="slack-catch-up")

    async def _catch_up(self) -> None:
        seen, places, forgotten = await self.catchup.run()
        self.ctx.events.emit(
            "channel.caught_up", self.kind, messages=seen, places=places, forgotten=forgotten
        )

    async def _open(self) -> bool:
        await self.connection.start()
        return True

    async def _patiently(self, step: Callable[[], Awaitable[T]], token: str) -> T | None:
        """Run a start-up step, retrying with backoff while Slack is unreachable or
        failing; None (health `failed`, naming the variable) when Slack refuses `token`."""
        attempt = 0
        while True:
            try:
                return await step()
            except SlackApiError as exc:
                error = str(exc.response.get("error", exc.response.status_code))
                if error in REFUSED_TOKEN:
                    log.error("Slack refused %s (%s); the Slack channel is off", token, error)
                    self._health("failed", f"{token} refused by Slack: {error}")
                    return None
                problem = f"{exc.response.api_url.rsplit('/', 1)[-1]} failed: {error}"
            except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            delay = backoff(attempt, 1.0, CONNECT_BACKOFF_CAP)
            log.warning("Slack: %s; retrying in %.1fs", problem, delay)
            self._health("connecting", problem)
            attempt += 1
            await asyncio.sleep(delay)

    def _identity(self) -> BotIdentity | None:
        return self.events.identity

    def _malformed(self, error: str) -> None:
        self.ctx.refuse(self.kind, "malformed request", error=error)

    def _health(self, state: str, detail: str) -> None:
        self.ctx.set_health(self.kind, state, detail)
