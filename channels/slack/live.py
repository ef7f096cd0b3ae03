"""Slack: the coordinator's answer shown while the model writes it, finished by the outbox.

The first text starts a stream in the thread (`chat.startStream`, with the person as
`recipient_user_id` / `recipient_team_id` outside a DM); more text is appended at
most every APPEND_SECONDS (`chat.appendStream`). Where streaming is refused (any
error code: Slack Connect recipients, a DM's top level which has no thread), the
text is posted (`chat.postMessage`) and edited as it grows (`chat.update`); a stream
that expired server-side (`message_not_found`) goes on the same way. `ratelimited`
waits for Retry-After, the text kept.

The outbox row is the truth: when the row arrives (`adopt`, called by the poster
for its first part, inside the row's attempt records), the live message becomes
that row's message: the stream stopped with what is missing and the row's metadata
(`chat.stopStream`), or the message updated to the row's text (`chat.update`, also
with the metadata). The live message's place (ts, what it shows) is kept in the
channel's key/value state from the moment it exists, so after a crash the restart
finishes that message instead of posting a second one.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import COORDINATOR, Answer, ChannelStore, Outbound, Target, TransientDeliveryError
from channels.live_messages import LiveMessages, LiveText
from channels.slack.format import TEXT_LIMIT, to_mrkdwn
from channels.slack.history import HistoryError, read
from channels.slack.identity import BotIdentity
from channels.slack.types import METADATA_TYPE

log = logging.getLogger(__name__)

APPEND_SECONDS = 0.5  # between two writes to one live message
#: what a live message shows at most (the row's other parts are posted as usual)
LIVE_LIMIT = TEXT_LIMIT - 100
KV = "slack.live:"
LOOKUP_MARGIN = 60.0  # seconds before a lost start that its lookup reads from
Meta = dict[str, Any]
#: how a live message is written: a Slack stream, or a post edited as it grows
#: (`update`), the one for a DM's top level and wherever a stream is refused or expired
Mode = Literal["stream", "update"]


@dataclass
class Live(LiveText):
    """One message written while the model writes it: a stream, or a post edited."""

    recipient: str | None
    mode: Mode = "stream"
    channel: str = ""
    ts: str | None = None
    trying_at: float | None = None  # a start was sent at (time.time()), its answer unknown


class SlackLives(LiveMessages[Live]):
    """The live messages of the Slack channel, one per thread at a time."""

    kv = KV
    limit = LIVE_LIMIT
    pause = APPEND_SECONDS

    def __init__(
        self,
        client: AsyncWebClient,
        store: ChannelStore,
        identity: Callable[[], BotIdentity | None],
        reader: AsyncWebClient | None = None,
    ) -> None:
        super().__init__(store)
        self.client = client  # never repeats a request by itself (a start is not idempotent)
        self.reader = reader or client
        self.identity = identity
        #: observers of each first write (the bench's clock)
        self.first_write: list[Callable[[Target], None]] = []

    # -- fed by the progress seam --------------------------------------------------------
    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        self.take(self.get(target) or self._new(target, recipient), delta)

    async def abandon(self, target: Target) -> None:
        """A stopped turn: the stream ends as it is; the message stays."""
        live = self.get(target)
        if live is None:
            return
        await self._close(live)
        if live.mode == "stream" and live.ts:
            await _quietly(self.client.chat_stopStream(channel=live.channel, ts=live.ts))
        self._drop(live)

    # -- the outbox row arrives ----------------------------------------------------------
    async def adopt(self, msg: Outbound, speaker: str, first: str, whole: bool) -> Answer | None:
        """Make the live message of `msg`'s thread `msg`'s first part (`first`, in
        mrkdwn; `whole`: it is all of `msg`). None when there is none to make."""
        live = self.get(msg.target)
        if live is None or msg.agent != COORDINATOR or msg.kind != "reply" or msg.attachments:
            return None
        await self._close(live)
        if live.ts is None and live.trying_at is not None:
            await self._look_up(live)
            live.diverged = True
        if live.ts is None:
            self._drop(live)
            return None
        meta = {"event_type": METADATA_TYPE, "event_payload": {"outbox_id": msg.id, "part": 0}}
        final = f"**{speaker}:** {msg.text.strip()}"
        shown = f"**{speaker}:** {live.shown}"
        base = shown.rstrip()  # the row's text may end where the stream's whitespace does
        if live.mode == "stream" and whole and not live.diverged and final.startswith(base):
            rest = final[len(base) :]
            rest = rest.lstrip() if base != shown else rest  # its whitespace is there already
            if await self._stop_stream(live, rest or None, meta):
                return self._adopted(live)
        elif live.mode == "stream":
            await _quietly(self.client.chat_stopStream(channel=live.channel, ts=live.ts))
        await self.client.chat_update(channel=live.channel, ts=live.ts, text=first, metadata=meta)
        return self._adopted(live)

    def forget(self, target: Target, ts: str) -> None:
        """The row's first part is `ts`: a live record of that message is done."""
        live = self.get(target)
        if live is not None and live.ts == ts:
            self._drop(live)

    # -- live messages ---------------------------------------------------------------------
    def _restored(self, target: Target, record: dict[str, Any]) -> Live:
        live = Live(target=target, recipient=None)
        live.mode = "stream" if record.get("mode") == "stream" else "update"
        live.channel, live.ts = str(record.get("channel") or ""), record.get("ts")
        live.shown = str(record.get("shown") or "")
        live.trying_at = record.get("trying_at")
        return live

    def _new(self, target: Target, recipient: str | None) -> Live:
        live = self.lives[str(target)] = Live(target=target, recipient=recipient)
        if not target.thread:  # a DM's top level: a stream needs a thread
            live.mode = "update"
        return live

    def _record(self, live: Live) -> dict[str, Any]:
        return {
            "mode": live.mode,
            "channel": live.channel,
            "ts": live.ts,
            "shown": live.shown,
            "trying_at": live.trying_at,
        }

    async def _look_up(self, live: Live) -> None:
        """The message a start whose answer was lost made, if Slack has it: the bot's
        message in the thread since the try that carries no outbox metadata yet."""
        target, me = live.target, self.identity()
        if live.trying_at is None or me is None or target.address.startswith("U"):
            return
        args: dict[str, Any] = {"channel": target.address}
        args["oldest"] = f"{live.trying_at - LOOKUP_MARGIN:.6f}"
        method = "conversations.history"
        if target.thread:
            method, args["ts"] = "conversations.replies", target.thread
        try:
            async for message in read(self.reader, method, patient=False, max_pages=5, **args):
                meta = (message.get("metadata") or {}).get("event_type")
                mine = message.get("user") == me.user_id or message.get("bot_id") == me.bot_id
                if mine and meta != METADATA_TYPE and message.get("ts") != target.thread:
                    live.channel, live.ts = target.address, str(message["ts"])
        except HistoryError as exc:
            raise TransientDeliveryError(f"Slack: cannot look for a stream: {exc}") from exc

    def _adopted(self, live: Live) -> Answer:
        answer = {"channel": live.channel, "ts": live.ts}
        self._drop(live)
        return answer

    # -- writing -------------------------------------------------------------------------
    async def _write_once(self, live: Live) -> float:
        """One write of the pending text; how long to wait before the next."""
        text = live.pending[: LIVE_LIMIT - len(live.shown)]
        try:
            await self._send(live, text)
        except SlackApiError as exc:
            return self._failed(live, exc)
        except (SlackClientError, aiohttp.ClientError, TimeoutError, TransientDeliveryError) as exc:
            log.warning("Slack live message in %s: %s", live.target, exc)
            return APPEND_SECONDS * 4
        return self._wrote(live, text)

    async def _send(self, live: Live, text: str) -> None:
        if live.ts is None and live.trying_at is not None:
            await self._look_up(live)  # a start whose answer was lost may have made it
            if live.ts is not None:
                live.diverged = True  # what it shows is unknown: the row's text replaces it
                self._save(live)
                return
        if live.ts is None:
            live.trying_at = time.time()
            self._save(live)  # before the request: a crash after it leaves this to look up
            await self._start(live, text)
            for observer in self.first_write:
                observer(live.target)
        elif live.mode == "stream":
            await self.client.chat_appendStream(
                channel=live.channel, ts=live.ts, markdown_text=text
            )
        else:
            whole = to_mrkdwn(live.shown + text)
            await self.client.chat_update(channel=live.channel, ts=live.ts, text=_said(whole))

    async def _start(self, live: Live, text: str) -> None:
        target = live.target
        if live.mode == "stream":
            try:
                answer = await self.client.chat_startStream(**self._stream_args(live, text))
                live.channel, live.ts = str(answer["channel"]), str(answer["ts"])
                return
            except SlackApiError as exc:
                if _error(exc) == "ratelimited":
                    raise
                log.info("Slack refused a stream in %s (%s): posting instead", target, _error(exc))
                live.mode = "update"
        args: dict[str, Any] = {"channel": target.address, "text": _said(to_mrkdwn(text))}
        if target.thread:
            args["thread_ts"] = target.thread
        answer = await self.client.chat_postMessage(**args)
        live.channel, live.ts = str(answer["channel"]), str(answer["ts"])

    def _stream_args(self, live: Live, text: str) -> dict[str, Any]:
        args: dict[str, Any] = {
            "channel": live.target.address,
            "thread_ts": live.target.thread,
            "markdown_text": f"**{COORDINATOR}:** {text}",
        }
        if not live.target.address.startswith("D"):  # outside a DM Slack wants the reader
            args["recipient_user_id"] = live.recipient
            me = self.identity()
            args["recipient_team_id"] = me.team_id if me is not None else None
        return args

    def _failed(self, live: Live, exc: SlackApiError) -> float:
        error = _error(exc)
        if error == "ratelimited" or exc.response.status_code == 429:
            return _retry_after(exc)
        if live.ts is not None and live.mode == "stream":  # expired, or refused: edit instead
            log.info("Slack stream in %s ended (%s): editing instead", live.target, error)
            live.mode = "update"
            self._save(live)
            return 0.0
        log.warning("Slack live message in %s failed: %s", live.target, error)
        live.diverged = True  # show no more; the row arrives whole
        return APPEND_SECONDS

    async def _stop_stream(self, live: Live, rest: str | None, meta: Meta) -> bool:
        try:
            await self.client.chat_stopStream(
                channel=live.channel, ts=str(live.ts), markdown_text=rest, metadata=meta
            )
        except SlackApiError as exc:
            log.info("Slack stopStream in %s: %s; updating instead", live.target, _error(exc))
            return False
        return True


def _said(mrkdwn: str) -> str:
    return f"*{COORDINATOR}:* {mrkdwn}"


def _error(exc: SlackApiError) -> str:
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    return str(data.get("error") or f"HTTP {exc.response.status_code}")


def _retry_after(exc: SlackApiError) -> float:
    try:
        return max(0.0, float(exc.response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


async def _quietly(call: Any) -> None:
    """A call whose failure changes nothing (stopping a stream that may be gone)."""
    with contextlib.suppress(SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError):
        await call
