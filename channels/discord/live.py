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
row's first part and becomes it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field

import discord

from bot.seam import COORDINATOR, Answer, ChannelStore, Outbound, Target
from channels.discord.errors import NETWORK_ERRORS
from channels.discord.format import LIMIT, speaker, to_discord_markdown

log = logging.getLogger(__name__)

EDIT_SECONDS = 1.2
KV = "discord.live:"
LIVE_LIMIT = LIMIT - 100  # the rest arrives with the row (its other parts)


@dataclass
class Live:
    target: Target
    channel: int
    nonce: str = field(default_factory=lambda: uuid.uuid4().hex[:25])
    id: str | None = None
    shown: str = ""
    pending: str = ""
    diverged: bool = False  # what shows is not what the model now writes: the row fixes it
    closed: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    writer: asyncio.Task[None] | None = None


class DiscordLives:
    def __init__(self, client: discord.Client, store: ChannelStore) -> None:
        self.client = client
        self.store = store
        self.lives: dict[str, Live] = {}

    def feed(self, target: Target, delta: str) -> None:
        live = self.get(target) or self._new(target)
        if (
            live is None
            or live.closed
            or (not live.shown and not live.pending and not delta.strip())
        ):
            return
        room = LIVE_LIMIT - len(live.shown) - len(live.pending)
        if room <= 0:
            return
        live.pending += (delta if live.shown or live.pending else delta.lstrip())[:room]
        if live.writer is None or live.writer.done():
            live.writer = asyncio.create_task(self._write(live))

    def restart(self, target: Target) -> None:
        live = self.get(target)
        if live is not None and (live.shown or live.pending):
            live.diverged = True

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
        await messageable.get_partial_message(int(live.id)).edit(content=first)
        answer: Answer = {"id": live.id}
        self._drop(live)
        return answer

    def forget(self, target: Target, message_id: str) -> None:
        live = self.get(target)
        if live is not None and live.id == message_id:
            self._drop(live)

    # -- live messages -------------------------------------------------------------------
    def get(self, target: Target) -> Live | None:
        key = str(target)
        live = self.lives.get(key)
        if live is None and (saved := self.store.get_kv(KV + key)) is not None:
            record = json.loads(saved)
            live = Live(target, int(record["channel"]), str(record["nonce"]), record.get("id"))
            live.shown, live.diverged = str(record.get("shown") or ""), True  # before a restart
            self.lives[key] = live
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
        live = self.lives[str(target)] = Live(target, place)
        return live

    def _save(self, live: Live) -> None:
        record = {"channel": live.channel, "nonce": live.nonce, "id": live.id, "shown": live.shown}
        self.store.set_kv(KV + str(live.target), json.dumps(record))

    def _drop(self, live: Live) -> None:
        live.closed = True
        if self.lives.get(str(live.target)) is live:
            del self.lives[str(live.target)]
        self.store.delete_kv(KV + str(live.target))

    async def _close(self, live: Live) -> None:
        live.closed = True
        async with live.lock:
            pass

    # -- writing -------------------------------------------------------------------------
    async def _write(self, live: Live) -> None:
        while live.pending and not live.closed and not live.diverged:
            async with live.lock:
                if live.closed:
                    return
                wait = await self._write_once(live)
            await asyncio.sleep(wait)

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
        live.pending = live.pending[len(text) :]
        live.shown += text
        self._save(live)
        return EDIT_SECONDS
