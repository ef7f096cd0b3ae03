"""The connection to Slack: a bolt `AsyncApp`, fed by Socket Mode or an HTTP endpoint.

Socket Mode (SLACK_APP_TOKEN set): slack-sdk's aiohttp Socket Mode client, which
reconnects by itself after a dropped socket (a new `apps.connections.open` URL).
HTTP Events mode (only SLACK_SIGNING_SECRET): a route at `/slack/events`, mounted on
the app's one HTTP server (bot/ops/server.py: SWITCHBOARD_HTTP_PORT, else PORT, for
Procfile hosts, beside /healthz and /metrics), where bolt verifies each request's
signature and timestamp (401 otherwise). Until the bot knows who it is (auth.test at
start) the route answers 503, and Slack redelivers.

Both run bolt with `process_before_response=True`: the listener journals the event
first and only then acks, and bolt sends the ack (Socket Mode envelope ack, or the
HTTP 200) when the listener returns. A listener that raises (the journal failed)
sends no ack, so Slack redelivers.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMessage, web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.identity import BotIdentity
from channels.slack.types import EventCallback

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
#: Seconds between the Socket Mode client's pings; the SDK replaces a socket silent for
#: four of them.
PING_INTERVAL = 5.0
#: A socket whose last answered ping is older than this is reported lost (health
#: `reconnecting`) at once, before the SDK gives up on it: two pings went unanswered.
STALE_SECONDS = 11.0
#: At stop, envelopes being journaled get this long to send their acks before the
#: socket closes (an ack left unsent only makes Slack deliver the event again).
ACK_GRACE_SECONDS = 3.0

Dispatch = Callable[[EventCallback], None]
RequestListener = Callable[[AsyncBaseSocketModeClient, Any], Awaitable[None]]
Health = Callable[[str, str], None]
Refuse = Callable[[str], None]
Connected = Callable[[], None]


class _QuietTokenWarning(logging.Filter):
    """bolt warns that its `token` is unused when given a client and an authorize
    function; both are ours on purpose (the client carries SLACK_API_URL, authorize
    avoids an auth.test per event), so the warnings only confuse an operator."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token`" not in record.getMessage()


class _Repeated(logging.Filter):
    """The SDK logs a failed reconnect (`Failed to retrieve WSS URL …`) at every retry,
    every few seconds; the channel's health already reaches the console once per change
    of state, so the same line is let through once per REPEAT_SECONDS."""

    REPEAT_SECONDS = 600.0
    #: lines remembered; past this those let through over REPEAT_SECONDS ago leave
    SEEN_MAX = 256

    def __init__(self) -> None:
        super().__init__()
        #: a warning's first line -> when it was let through; bounded: SEEN_MAX, then the
        #: lines older than REPEAT_SECONDS go (an SDK line may carry ids, so keys vary)
        self._seen: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = record.getMessage().split("\n", 1)[0][:120]
        last = self._seen.get(key)
        if last is not None and record.created - last < self.REPEAT_SECONDS:
            return False
        if len(self._seen) >= self.SEEN_MAX:
            recent = record.created - self.REPEAT_SECONDS
            self._seen = {k: at for k, at in self._seen.items() if at > recent}
            while len(self._seen) >= self.SEEN_MAX:  # a flood of distinct lines
                del self._seen[next(iter(self._seen))]
        self._seen[key] = record.created
        return True


def build_app(
    client: AsyncWebClient,
    dispatch: Dispatch,
    signing_secret: str | None,
    identity: Callable[[], BotIdentity | None],
    prepare: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    before: Callable[[AsyncApp], None] | None = None,
) -> AsyncApp:
    bolt_log = logging.getLogger("channels.slack.bolt")
    bolt_log.addFilter(_QuietTokenWarning())
    if not any(isinstance(f, _Repeated) for f in bolt_log.filters):
        bolt_log.addFilter(_Repeated())

    async def authorize() -> AuthorizeResult:
        # bolt's default asks auth.test on every request until one answer is cached:
        # a burst of events would send a burst of auth.test. We asked once at start.
        me = identity()
        return AuthorizeResult(
            enterprise_id=None,
            team_id=me.team_id if me else None,
            bot_token=client.token,
            bot_id=me.bot_id if me else None,
            bot_user_id=me.user_id if me else None,
        )

    app = AsyncApp(
        # named: unnamed, bolt names the app after its caller's file with inspect.stack(),
        # which reads the source of every frame (~60 ms of a start, before Slack connects)
        name=f"{bolt_log.name}.app",
        client=client,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        process_before_response=True,
        authorize=authorize,
        # Middleware that does nothing for us costs every event before its ack:
        # SlackEvents drops our own posts itself, we use no workflow functions or
        # assistant threads, and ssl_check / url_verification exist only over HTTP.
        ignoring_self_events_enabled=False,
        ignoring_self_assistant_message_events_enabled=False,
        attaching_function_token_enabled=False,
        attaching_conversation_kwargs_enabled=False,
        ssl_check_enabled=signing_secret is not None,
        url_verification_enabled=signing_secret is not None,
        logger=bolt_log,
    )

    async def on_event(body: dict[str, Any], ack: AsyncAck) -> None:
        if prepare is not None:  # e.g. who the sender is (channels/slack/people.py)
            await prepare(body)
        dispatch(body)  # type: ignore[arg-type]  # journal first...
        await ack()  # ...then ack: bolt sends it as this returns

    if before is not None:  # listeners that must match before the catch-all below
        before(app)
    app.event(re.compile(".*"))(on_event)
    return app


class SocketModeConnection:
    def __init__(self, app: AsyncApp, app_token: str, health: Health, connected: Connected) -> None:
        self.handler = AsyncSocketModeHandler(
            app, app_token, web_client=app.client, ping_interval=PING_INTERVAL
        )
        self.health = health
        self.connected = connected
        #: envelopes between arrival and ack; bounded by what Slack has in flight to us
        self._acking: set[asyncio.Task[Any]] = set()
        self._stopping = False
        client = self.handler.client
        client.message_listeners.append(self._on_message)
        client.on_close_listeners.append(self._on_close)
        listeners = client.socket_mode_request_listeners
        listeners[:] = [self._gated(listener) for listener in listeners]

    @property
    def describe(self) -> str:
        return "Socket Mode"

    async def start(self) -> None:
        # The SDK retries a refused app token forever, logging each try; asking for the
        # socket URL once ourselves turns a refusal into an error the channel reports.
        client = self.handler.client
        opened = await client.web_client.apps_connections_open(app_token=client.app_token)
        client.wss_uri = str(opened["url"])
        await self.handler.connect_async()

    async def stop(self) -> None:
        """Take no new envelope, let those being journaled send their acks, then close:
        closing under an ack in flight makes the SDK log an error for a write to a
        closing socket (the event, journaled but unacked, comes again)."""
        self._stopping = True
        if self._acking:
            await asyncio.wait(set(self._acking), timeout=ACK_GRACE_SECONDS)
        await self.handler.close_async()

    def _gated(self, listener: RequestListener) -> RequestListener:
        """bolt's envelope listener (journal, then ack), refused once stopping (left
        unacked, so Slack delivers it again) and tracked until its ack is sent."""

        async def gated(client: AsyncBaseSocketModeClient, request: Any) -> None:
            if self._stopping:
                return
            task = asyncio.current_task()
            assert task is not None  # the SDK runs each envelope in a task of its own
            self._acking.add(task)
            try:
                await listener(client, request)
            finally:
                self._acking.discard(task)

        return gated

    async def probe(self) -> tuple[str, str] | None:
        """The socket's own state, asked of the client: connected, or lost (closed,
        stale, pings unanswered for STALE_SECONDS, reconnects refused)."""
        client = self.handler.client
        if getattr(client, "closed", False):
            return None  # stopping: the channel reports it
        if not await client.is_connected():
            return "reconnecting", "Socket Mode: no live socket (the client is reconnecting)"
        last = getattr(client, "last_ping_pong_time", None)
        if last is not None and time.time() - last > STALE_SECONDS:
            silent = time.time() - last
            return "reconnecting", f"Socket Mode: pings unanswered for {silent:.0f}s"
        return "connected", "Socket Mode"

    async def _on_message(
        self, client: AsyncBaseSocketModeClient, message: dict[str, Any], raw: str | None
    ) -> None:
        if message.get("type") == "hello":
            self.health("connected", "Socket Mode")
            self.connected()  # a new socket: what was said while none was open is read back

    async def _on_close(self, message: WSMessage) -> None:
        log.warning("Slack closed the Socket Mode connection; reconnecting")
        self.health("reconnecting", "Socket Mode socket closed by Slack")


class HttpConnection:
    def __init__(self, app: AsyncApp, host: str, port: int, health: Health, refuse: Refuse) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.health = health
        self.refuse = refuse
        self.open = False

    @property
    def describe(self) -> str:
        return f"HTTP Events on {self.host}:{self.port}{EVENTS_PATH}"

    @property
    def routes(self) -> list[tuple[str, str, Callable[[web.Request], Awaitable[web.Response]]]]:
        """Mounted on the app's HTTP server, which listens before channels start."""
        return [("POST", EVENTS_PATH, self._handle)]

    async def start(self) -> None:
        self.open = True
        self.health("connected", self.describe)

    async def stop(self) -> None:
        self.open = False

    async def _handle(self, request: web.Request) -> web.Response:
        if not self.open:  # not started, or stopping: Slack retries what gets no 200
            return web.Response(status=503, text="not ready")
        try:
            bolt_request = await to_bolt_request(request)
        except ValueError as exc:  # a body bolt cannot parse: nothing to verify or journal
            self.refuse(f"{type(exc).__name__}: {exc}")
            return web.Response(status=400, text="malformed request body")
        return await to_aiohttp_response(await self.app.async_dispatch(bolt_request))
