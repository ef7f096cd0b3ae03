"""The connection to Discord: discord.py's gateway client, its endpoints, its health.

discord.py keeps the gateway alive itself: heartbeats, RESUME after a dropped socket
(the missed events are replayed), a fresh IDENTIFY when a session cannot resume, and
REST rate-limit buckets. This module only configures it (intents with message
content, the endpoints, no @everyone pings from agent text), logs in with backoff
while the network is down, reports health for `switchboard status`, hands every
MESSAGE_CREATE to a callback, and calls another on each new session (`catchup.py`
reads back what was missed). Nothing here parses messages or posts them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import discord
import yarl
from discord.backoff import ExponentialBackoff

from bot.seam import ChannelStore
from channels.discord.errors import INTENT_MISSING, NETWORK_ERRORS, TOKEN_REFUSED

log = logging.getLogger(__name__)

KIND = "discord"
#: a rate limit longer than this goes back to the durable outbox (which honours
#: `retry_after`) instead of holding the delivery task in discord.py's sleep;
#: discord.py accepts no less than 30 s
MAX_RATELIMIT_WAIT = 30.0

OnMessage = Callable[[discord.Message, discord.ClientUser], None]
OnSession = Callable[[], Coroutine[Any, Any, object]]


def point_at(api_url: str, gateway_url: str | None) -> None:
    """DISCORD_API_URL / DISCORD_GATEWAY_URL. discord.py reads both from class attributes
    (there is no per-client setting), so they are process-wide: one bot per process."""
    discord.http.Route.BASE = api_url.rstrip("/")
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def intents() -> discord.Intents:
    """Only what the channel reads: guilds (the channel/thread cache), messages, content."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    return wanted


#: seconds past a heartbeat interval without its ack before the gateway counts as lost
ACK_GRACE = 5.0


def stamp_heartbeats() -> None:
    """discord.py (2.7.1) stamps a heartbeat's send time in its keep-alive thread once the
    send has finished on the event loop; a gateway that acks at once (a gateway proxy, a
    loaded bot's loop) can be read first, and the ack then measures from the beat before:
    "Can't keep up, websocket is 41.3s behind" at every beat, and a latency of 41 s, in
    the soak's log. The time is stamped on the loop just before the send, as discord.py's
    own fix does (Rapptz/discord.py#10448); nothing, if a later release moves it."""
    socket_class = discord.gateway.DiscordWebSocket
    send = socket_class.send_heartbeat
    if getattr(send, "stamped", False):
        return

    async def send_heartbeat(self: Any, data: Any) -> None:
        keep_alive = getattr(self, "_keep_alive", None)
        if keep_alive is not None and hasattr(keep_alive, "_last_send"):
            keep_alive._last_send = time.perf_counter()
        await send(self, data)

    send_heartbeat.stamped = True  # type: ignore[attr-defined]
    socket_class.send_heartbeat = send_heartbeat  # type: ignore[method-assign]


class GatewayClient(discord.Client):
    def __init__(self, store: ChannelStore, on_message: OnMessage, on_session: OnSession) -> None:
        stamp_heartbeats()
        super().__init__(
            intents=intents(),
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True),
            max_ratelimit_timeout=MAX_RATELIMIT_WAIT,
            max_messages=None,  # we keep no message cache: the journal is ours
            chunk_guilds_at_startup=False,
        )
        self.store = store
        self._handle = on_message
        self._on_session = on_session
        self._catching_up: asyncio.Task[object] | None = None
        self.logged_in = asyncio.Event()
        self.connected = asyncio.Event()
        self.connected_at = 0.0
        #: a button click (channels/discord/approvals.py) or a command (commands.py)
        self.on_click: Callable[[discord.Interaction], Awaitable[None]] | None = None

    # -- lifecycle -----------------------------------------------------------------
    async def run_forever(self, token: str) -> None:
        """Log in (retrying while Discord is unreachable), then stay connected."""
        self.health("connecting")
        try:
            await self._login(token)
            await self.connect(reconnect=True)
        except discord.LoginFailure:
            self._fail(TOKEN_REFUSED)
        except discord.PrivilegedIntentsRequired:
            self._fail(INTENT_MISSING)
        except discord.ConnectionClosed as exc:
            self._fail(TOKEN_REFUSED if exc.code == 4004 else f"gateway closed ({exc.code})")

    async def _login(self, token: str) -> None:
        backoff: ExponentialBackoff[bool] = ExponentialBackoff()
        while True:
            try:
                await self.login(token)
            except (discord.HTTPException, *NETWORK_ERRORS) as exc:
                if isinstance(exc, discord.HTTPException) and exc.status < 500:
                    raise
                delay = backoff.delay()
                self.health("connecting", f"Discord unreachable ({exc}); retry in {delay:.0f}s")
                await asyncio.sleep(delay)
            else:
                self.logged_in.set()
                return

    def _fail(self, reason: str) -> None:
        log.error("Discord channel stopped: %s", reason)
        self.health("failed", reason)

    def health(self, state: str, detail: str = "") -> None:
        self.store.set_health(KIND, state, detail)

    async def probe(self) -> tuple[str, str] | None:
        """The gateway socket's own state: closed, or heartbeats unanswered longer than
        one interval and ACK_GRACE; None before the first connection or once closing."""
        if self.is_closed() or not self.connected_at:
            return None
        ws = self.ws
        socket = getattr(ws, "socket", None)
        if ws is None or socket is None or socket.closed:
            return "reconnecting", "gateway socket closed; discord.py reconnects"
        keep = getattr(ws, "_keep_alive", None)
        interval = getattr(keep, "interval", None)
        if keep is not None and interval:
            silent = time.perf_counter() - keep._last_ack
            if silent > interval + ACK_GRACE:
                return "reconnecting", f"gateway heartbeats unanswered for {silent:.0f}s"
        return "connected", f"as {self.user}"

    # -- discord.py events ---------------------------------------------------------
    async def on_connect(self) -> None:
        self.connected_at = time.time()  # what arrives from here on is live
        self.connected.set()
        self.health("connected", f"as {self.user} (gateway session)")

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        super().dispatch(event, *args, **kwargs)
        if event == "ready" and not self.is_closed():
            # A new session (not a resumed one): what was said in the gap is not
            # replayed. (Not an `on_ready` handler: discord.py may fire `ready` while
            # the client closes, leaving a handler coroutine that never runs.)
            self._catching_up = asyncio.create_task(self._on_session(), name="discord-catch-up")

    async def close(self) -> None:
        if self._catching_up is not None:
            self._catching_up.cancel()
        await super().close()

    async def on_resumed(self) -> None:
        self.connected.set()
        self.health("connected", f"as {self.user} (session resumed)")

    async def on_disconnect(self) -> None:
        self.connected.clear()
        if not self.is_closed():
            self.health("reconnecting", "gateway socket lost; discord.py resumes the session")

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if self.on_click is not None:
            await self.on_click(interaction)

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None:
            self._handle(message, self.user)
