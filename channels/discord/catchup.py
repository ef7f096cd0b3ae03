"""Catching up on what people said while the bot had no gateway session.

Discord replays missed events only to a session that RESUMEs. After a restart, or when
a session cannot resume (a fresh IDENTIFY), messages posted in the gap never arrive.
So on every new session (`on_ready`) the channels and threads where people talked to
the bot in the last CATCHUP_DAYS before the session began (the MAX_CHANNELS most
recent) are read back from the journal, each with the newest message id journaled
there, and their history after that id goes through the intake like any
MESSAGE_CREATE. Messages journaled since the session began came live and say
nothing about the gap. The journal drops what it already holds; chatter not addressed
to the bot is skipped by the intake as always. A channel that cannot be read (deleted,
access lost) is logged and skipped.
"""

from __future__ import annotations

import logging

import discord

from bot.store import Store
from channels.discord.events import KIND, Intake

log = logging.getLogger(__name__)

CATCHUP_DAYS = 3
MAX_CHANNELS = 50  # the most recently active channels and threads, one request each
MAX_PER_CHANNEL = 200  # messages read back per channel and session at most
MAX_JOURNAL_ROWS = 5000  # the newest journaled Discord messages that name the channels


class CatchUp:
    def __init__(self, client: discord.Client, store: Store, intake: Intake) -> None:
        self.client = client
        self.store = store
        self.intake = intake

    def last_seen(self, before: float) -> dict[int, int]:
        """Channel id -> the newest message id journaled there before `before` (when the
        session began: what came since arrived live), also for the thread a message's
        conversation continues in; the MAX_CHANNELS most recent."""
        newest: dict[int, int] = {}
        since = before - CATCHUP_DAYS * 86400
        for msg in self.store.recent_inbound(KIND, since, before, MAX_JOURNAL_ROWS):
            if not msg.message_id.isdigit():
                continue
            # where it was said, and the thread its conversation continues in
            for channel in (msg.meta.get("channel"), msg.reply_to.thread):
                if isinstance(channel, str) and channel.isdigit():
                    key = int(channel)
                    newest[key] = max(newest.get(key, 0), int(msg.message_id))
        recent = sorted(newest.items(), key=lambda item: item[1], reverse=True)
        return dict(recent[:MAX_CHANNELS])

    async def run(self, session_began: float) -> int:
        """Read back every channel; the number of messages the intake saw."""
        me = self.client.user
        if me is None:
            return 0
        seen = 0
        for channel_id, last in self.last_seen(session_began).items():
            try:
                channel = self.client.get_channel(channel_id) or await self.client.fetch_channel(
                    channel_id
                )
                if not isinstance(channel, discord.abc.Messageable):
                    continue
                after = discord.Object(last)
                async for message in channel.history(
                    after=after, oldest_first=True, limit=MAX_PER_CHANNEL
                ):
                    self.intake.on_message(message, me)
                    seen += 1
            except (discord.HTTPException, discord.ClientException) as exc:
                log.warning("Discord: cannot catch up on channel %s: %s", channel_id, exc)
        return seen
