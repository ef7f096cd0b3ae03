"""Catching up on what people said while the bot could not hear them.

Slack redelivers an event it saw no ack for a few times over a few minutes, then drops
it: a bot down longer than that (a deploy gone wrong, a host reboot) never hears the
mentions made meanwhile. So at every (re)connection the places the bot talks in are
read back from Slack's history and go through the same intake as live events (the
journal drops what it already holds; what is not for the bot is skipped as always):

- the threads it is in (`conversations.replies`), DMs (`conversations.history`), and
  the channels it was mentioned in (`conversations.history`, top level: mentions),
- each from its watermark (`bot/inbox/watermarks.py`): the message up to which everything
  there has been read. A mark moves when a place was read to its end, or with a live
  message once that place is not being caught up, in the journal's transaction; so a
  process or socket dying at any moment leaves the gap behind it readable.

Bounds: the MAX_PLACES places with the newest marks within CATCHUP_DAYS (older marks
are dropped), MAX_PAGES pages of 200 messages per place and catch-up (the mark then
moves to the last message read; the next catch-up goes on from there). A place with no
usable mark (corrupt, quarantined; a thread known from before marks existed) is read
from CATCHUP_DAYS ago. HTTP 429 waits out Slack's `Retry-After` and asks for the same
page again. A place Slack no longer lets the bot read (`not_in_channel`,
`channel_not_found`, `thread_not_found`: removed, archived, deleted) is forgotten.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import UNKNOWN, ChannelStore, Watermarks
from channels.slack.events import SlackEvents
from channels.slack.history import HistoryError, read, ts_key
from channels.slack.threads import ThreadMemory
from channels.slack.types import SlackEdit

log = logging.getLogger(__name__)

KIND = "slack"
CATCHUP_DAYS = 3
MAX_PLACES = 100
MAX_PAGES = 10
Prepare = Callable[[dict[str, Any]], Awaitable[None]]
GONE = {"not_in_channel", "channel_not_found", "thread_not_found", "is_archived"}


def place_of(channel: str, ts: str, thread_ts: str | None) -> str:
    """`C1` for a top-level message (channel or DM), `C1/<thread_ts>` for a reply."""
    return f"{channel}/{thread_ts}" if thread_ts and thread_ts != ts else channel


class SlackCatchUp:
    def __init__(
        self,
        client: AsyncWebClient,
        store: ChannelStore,
        events: SlackEvents,
        threads: ThreadMemory,
        prepare: Prepare | None = None,
    ) -> None:
        self.client = client
        self.prepare = prepare  # what the live path does before journaling (people links)
        self.store = store
        self.events = events
        self.threads = threads
        self.marks = Watermarks(store, KIND, ts_key, float)

    # -- live messages (called by the intake inside the journal's transaction) ---------
    def journaled(self, channel: str, ts: str, thread_ts: str | None, is_dm: bool) -> None:
        self.marks.live(place_of(channel, ts, thread_ts), ts)
        if not is_dm and not thread_ts:  # a mention in a channel opens a thread on itself
            self.marks.opened(f"{channel}/{ts}", ts)

    def posted_in(self, channel: str, thread_ts: str) -> None:
        """A thread our post is in: nothing before its parent can be unread."""
        self.marks.opened(f"{channel}/{thread_ts}", thread_ts)

    # -- a (re)connection ----------------------------------------------------------------
    def places(self, now: float) -> dict[str, str]:
        """Place -> the `ts` to read after (UNKNOWN: from CATCHUP_DAYS ago)."""
        cutoff = now - CATCHUP_DAYS * 86400
        chosen = self.marks.to_read(cutoff, MAX_PLACES)
        for thread in self.threads.recent(cutoff):  # threads known before marks existed
            if len(chosen) >= MAX_PLACES:
                break
            chosen.setdefault(thread, UNKNOWN)
        return chosen

    async def run(self) -> tuple[int, int, int]:
        """Read back every place: (messages read, places read, places forgotten)."""
        now = time.time()
        places = self.places(now)
        self.marks.catching_up(places)
        seen = forgotten = 0
        for place, mark in places.items():
            oldest = mark if mark != UNKNOWN else f"{now - CATCHUP_DAYS * 86400:.6f}"
            try:
                seen += await self._read(place, oldest)
            except HistoryError as exc:
                if exc.error in GONE:
                    log.warning("Slack: %s cannot be read any more (%s); forgotten", place, exc)
                    self.marks.forget(place)
                    forgotten += 1
                else:
                    log.warning("Slack: cannot catch up on %s now: %s", place, exc)
            except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
                log.warning("Slack: cannot catch up on %s now: %s", place, exc)
        return seen, len(places), forgotten

    async def _read(self, place: str, oldest: str) -> int:
        channel, _, thread = place.partition("/")
        if thread:
            method, args = "conversations.replies", {"channel": channel, "ts": thread}
        else:
            method, args = "conversations.history", {"channel": channel}
        messages = [
            m
            async for m in read(
                self.client, method, patient=True, max_pages=MAX_PAGES, oldest=oldest, **args
            )
        ]
        # history comes newest first, replies oldest first (the parent leading, whatever
        # `oldest` says): take them in the order they were said, after the mark
        later = sorted(
            (m for m in messages if ts_key(str(m["ts"])) > ts_key(oldest)),
            key=lambda m: ts_key(str(m["ts"])),
        )
        for message in later:
            event = _event(channel, message)
            if self.prepare is not None:
                await self.prepare({"event": event})
            with self.store.tx():
                self.events.take(event)
        complete = len(messages) < MAX_PAGES * 200
        newest = str(later[-1]["ts"]) if later else None
        self.marks.caught_up(place, newest, complete=complete)
        return len(later)


def _event(channel: str, message: dict[str, Any]) -> SlackEdit:
    """A history message as the `message` event Slack would have sent."""
    event: dict[str, Any] = {**message, "type": "message", "channel": channel}
    event["channel_type"] = "im" if channel.startswith("D") else "channel"
    if event.get("thread_ts") == event.get("ts"):
        del event["thread_ts"]  # a thread's parent came as a top-level message
    return event  # type: ignore[return-value]
