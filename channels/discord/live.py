"""Discord: the coordinator's answer posted at its first words and edited in place as the
model writes more, finished by the outbox row.

Only where the place already exists: a DM, or a thread that is open (a conversation
begun by a mention opens its thread with the first reply, so its first answer arrives
whole). Edits are at least EDIT_SECONDS apart (Discord limits edits per channel);
a 429 that discord.py gives up on waits its `retry_after`, the text kept. The first
post carries a nonce Discord enforces, kept in the channel's key/value state with the
message id once known: a post whose answer was lost, or a crash, never makes a second
message, because posting again with that nonce returns the first one.

The outbox row is the truth: when it is delivered (`adopt`, called by the poster for
its first part, inside the row's attempt records) the live message is edited to the
row's first part and becomes it. A thread archived meanwhile (a day without messages)
refuses the edit: the row is then posted as a new message, which reopens the thread.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import discord

from bot.seam import COORDINATOR, Answer, ChannelStore, Outbound, Target
from channels.discord.errors import NETWORK_ERRORS, THREAD_ARCHIVED
from channels.discord.format import LIMIT, speaker, to_discord_markdown
from channels.live_messages import LiveMessages, LiveText

log = logging.getLogger(__name__)

EDIT_SECONDS = 1.2
KV = "discord.live:"
LIVE_LIMIT = LIMIT - 100  # the rest arrives with the row (its other parts)


@dataclass
class Live(LiveText):
    channel: int
    nonce: str = field(default_factory=lambda: uuid.uuid4().hex[:25])
    id: str | None = None


class DiscordLives(LiveMessages[Live]):
    kv = KV
    limit = LIVE_LIMIT
    pause = EDIT_SECONDS

    def __init__(self, client: discord.Client, store: ChannelStore) -> None:
        super().__init__(store)
        self.client = client

    def feed(self, target: Target, delta: str) -> None:
        self.take(self.get(target) or self._new(target), delta)

    async def abandon(self, target: Target) -> None:
        live = self.get(target)
        if live is not None:
            await self._close(live)
            self._drop(live)

    async def adopt(self, msg: Outbound, channel: str, first: str) -> Answer | None:
        """The live message in `channel` made `msg`'s first part (`first`); None when
        there is none."""
        live = self.get(msg.target)
        if live is None or msg.agent != COORDINATOR or msg.kind != "reply" or msg.attachments:
            return None
        if str(live.channel) != channel:
            return None
        await self._close(live)
        if not live.shown and live.id is None:
            self._drop(live)
            return None
        messageable = self.client.get_partial_messageable(live.channel)
        if live.id is None:  # sent, its answer lost: the same nonce returns that message
            sent = await messageable.send(first, nonce=live.nonce)
            live.id = str(sent.id)
        try:
            await messageable.get_partial_message(int(live.id)).edit(content=first)
        except discord.HTTPException as exc:
            if exc.code != THREAD_ARCHIVED:
                raise
            self._drop(live)  # the thread went quiet meanwhile: the row is posted anew,
            return None  # which opens it again
        answer: Answer = {"id": live.id}
        self._drop(live)
        return answer

    def forget(self, target: Target, message_id: str) -> None:
        live = self.get(target)
        if live is not None and live.id == message_id:
            self._drop(live)

    # -- live messages -------------------------------------------------------------------
    def _restored(self, target: Target, record: dict[str, Any]) -> Live:
        live = Live(target=target, channel=int(record["channel"]), nonce=str(record["nonce"]))
        live.id, live.shown = record.get("id"), str(record.get("shown") or "")
        return live

    def _new(self, target: Target) -> Live | None:
        """A live message where the place exists already: an open thread, or a place
        without one (a person's conversation there is a DM)."""
        if target.thread:
            if not isinstance(self.client.get_channel(int(target.thread)), discord.Thread):
                return None  # it opens with the first reply
            place = int(target.thread)
        else:
            place = int(target.address)
        live = self.lives[str(target)] = Live(target=target, channel=place)
        return live

    def _record(self, live: Live) -> dict[str, Any]:
        return {"channel": live.channel, "nonce": live.nonce, "id": live.id, "shown": live.shown}

    # -- writing -------------------------------------------------------------------------
    async def _write_once(self, live: Live) -> float:
        text = live.pending
        content = f"**{speaker(COORDINATOR)}:** {to_discord_markdown(live.shown + text)}"
        messageable = self.client.get_partial_messageable(live.channel)
        try:
            if live.id is None:
                self._save(live)  # the nonce first: a lost answer is found by it
                sent = await messageable.send(content, nonce=live.nonce)
                live.id = str(sent.id)
            else:
                await messageable.get_partial_message(int(live.id)).edit(content=content)
        except discord.RateLimited as exc:
            return exc.retry_after
        except discord.HTTPException as exc:
            if exc.status == 429:
                return EDIT_SECONDS * 2
            log.warning("Discord live message in %s: %s", live.target, exc)
            live.diverged = True  # show no more; the row arrives whole
            return 0.0
        except NETWORK_ERRORS as exc:
            log.warning("Discord live message in %s: %s", live.target, exc)
            return EDIT_SECONDS * 2
        return self._wrote(live, text)
