"""Catching up on what people said while the bot had no gateway session.

Discord replays missed events only to a session that RESUMEs. After a restart, or when
a session cannot resume (a fresh IDENTIFY), messages posted in the gap never arrive.
So on every new session the places (channels, threads, DMs) where people talked to the
bot are read back from their watermark (`bot/inbox/watermarks.py`): the message up to which
everything there has been read. Their history after it goes through the intake like
any MESSAGE_CREATE (the journal drops what it already holds; chatter not addressed to
the bot is skipped by the intake as always).

A watermark moves when a place's history has been read to its end in a catch-up, or
with a live message once that place is not (or no longer) being caught up in this
session, in the same transaction as the message's journal row. So a session that dies
at any moment, before, during or after its catch-up, leaves every mark at or before
the first message it did not read, and the next session reads the gap again.

Bounds: the MAX_PLACES places with the most recent marks within CATCHUP_DAYS (older
marks are dropped), at most MAX_PER_PLACE messages per place and catch-up (the mark
then moves to the last one read, and the next new session goes on from there). A place
with no usable mark (a corrupt one, quarantined; a place journaled before marks
existed) is read from CATCHUP_DAYS ago. A guild channel or thread with no mark whose
last message is newer than what the bot last heard (its newest mark, or its first
start) is read from that moment: a mention in a channel new to the bot. A place that
cannot be read any more (deleted, the bot removed: 403/404) is forgotten; other
errors leave its mark where it was.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

import discord

from bot.seam import UNKNOWN, ChannelStore, Inbound, Watermarks
from channels.discord.events import KIND, Intake

log = logging.getLogger(__name__)

CATCHUP_DAYS = 3
MAX_PLACES = 50  # the most recently active channels and threads
MAX_PER_PLACE = 1000  # messages read back per place and catch-up at most
MAX_JOURNAL_ROWS = 5000  # the newest journaled Discord messages that name places
MARGIN = 60.0  # seconds before the bot last heard anything that a new channel is read from


def snowflake_time(mark: str) -> float:
    return discord.utils.snowflake_time(int(mark)).timestamp()


def _snowflake_at(epoch: float) -> int:
    return discord.utils.time_snowflake(dt.datetime.fromtimestamp(epoch, dt.UTC))


class CatchUp:
    def __init__(self, client: discord.Client, store: ChannelStore, intake: Intake) -> None:
        self.client = client
        self.store = store
        self.intake = intake
        self.marks = Watermarks(store, KIND, int, snowflake_time)

    # -- live messages ---------------------------------------------------------------
    def on_message(self, message: discord.Message, me: discord.ClientUser) -> None:
        """A live message: journaled, and its place's mark moved, in one transaction."""
        with self.store.tx():
            self._take(message, me)

    def _take(self, message: discord.Message, me: discord.ClientUser) -> Inbound | None:
        inbound = self.intake.on_message(message, me)
        place, mark = str(message.channel.id), str(message.id)
        if inbound is not None or self.marks.get(place) is not None:
            self.marks.live(place, mark)
        if inbound is not None and inbound.reply_to.thread == inbound.message_id:
            self.marks.opened(inbound.message_id, mark)  # the thread our answer opens
        return inbound

    # -- a new session ---------------------------------------------------------------
    def places(self, now: float) -> dict[str, str]:
        """Place -> the mark to read after (UNKNOWN: from CATCHUP_DAYS ago)."""
        cutoff = now - CATCHUP_DAYS * 86400
        chosen = self.marks.to_read(cutoff, MAX_PLACES)
        for place in self._journaled_places(cutoff, now):
            if len(chosen) >= MAX_PLACES:
                break
            chosen.setdefault(place, UNKNOWN)
        # channels where the bot never talked, with messages since it last heard
        # anything (a mention in a new channel while it was down)
        since = max(self.marks.listening_since(now) - MARGIN, cutoff)
        for channel in self._active_channels(since):
            if len(chosen) >= MAX_PLACES:
                break
            chosen.setdefault(channel, str(_snowflake_at(since)))
        return chosen

    def _active_channels(self, since: float) -> list[str]:
        """Text channels and threads of the bot's guilds with a message after `since`."""
        found = []
        for guild in self.client.guilds:
            channels: list[discord.TextChannel | discord.Thread] = [
                *guild.text_channels,
                *guild.threads,
            ]
            for channel in channels:
                last = channel.last_message_id
                if last is not None and snowflake_time(str(last)) >= since:
                    found.append(str(channel.id))
        return found

    def _journaled_places(self, since: float, until: float) -> list[str]:
        """Where people talked to the bot lately (newest first), for places with no mark."""
        places: dict[str, None] = {}
        for msg in self.store.recent_inbound(KIND, since, until, MAX_JOURNAL_ROWS):
            for place in (msg.meta.get("channel"), msg.reply_to.thread):
                if isinstance(place, str) and place.isdigit():
                    places.setdefault(place)
        return list(places)

    async def run(self) -> tuple[int, int]:
        """Read back every place; (messages the intake saw, places forgotten)."""
        me = self.client.user
        if me is None:
            return 0, 0
        places = self.places(time.time())
        self.marks.catching_up(places)
        seen = forgotten = 0
        for place, mark in places.items():
            try:
                seen += await self._read(place, mark, me)
            except (discord.NotFound, discord.Forbidden) as exc:
                log.warning("Discord: place %s cannot be read any more (%s); forgotten", place, exc)
                self.marks.forget(place)
                forgotten += 1
            except (discord.HTTPException, discord.ClientException) as exc:
                log.warning("Discord: cannot catch up on %s now: %s", place, exc)
        return seen, forgotten

    async def _read(self, place: str, mark: str, me: discord.ClientUser) -> int:
        channel_id = int(place)
        channel = self.client.get_channel(channel_id) or await self.client.fetch_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            self.marks.forget(place)
            return 0
        after: discord.abc.Snowflake | dt.datetime = (
            discord.Object(int(mark))
            if mark != UNKNOWN
            else dt.datetime.now(dt.UTC) - dt.timedelta(days=CATCHUP_DAYS)
        )
        newest, count = None, 0
        async for message in channel.history(after=after, oldest_first=True, limit=MAX_PER_PLACE):
            with self.store.tx():
                self._take(message, me)
            newest, count = str(message.id), count + 1
        self.marks.caught_up(place, newest, complete=count < MAX_PER_PLACE)
        return count
