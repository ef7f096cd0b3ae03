"""Delivering an agent's message to Discord: where it goes, the thread it opens, the parts.

Where, by target:
- `discord:<channel>/<thread>`: in that thread. When it does not exist yet, it is
  opened on the message of the same id (the mention that began the conversation).
  When it cannot be opened (no permission, not a text channel), the parts go to the
  channel as a reply to that message instead.
- `discord:<channel>`: in the channel (a DM, or a channel named by SWITCHBOARD_HOME or
  `deliver_to`). A worker's question there opens a thread on the question itself, so
  the answer in that thread wakes the worker; the receipt names that thread.

A message split in parts resumes at the part that failed when the outbox retries, also
after a crash: where it goes and the parts already posted are written to the store's
key/value table (`discord.posted.<outbound id>`) after each part, and dropped once the
whole message is delivered. A part whose answer was lost is not posted twice: it
carries a nonce Discord enforces for a few minutes, and it goes through the core's
attempt records (`bot/outbox/attempts.py`), so a retry after a longer outage first looks for
it in the channel's history. Failures are mapped to the outbox's errors in
`errors.py`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import discord

from bot.seam import (
    Answer,
    Attachment,
    AttemptRow,
    Attempts,
    Bounded,
    ChannelStore,
    DeliveryReceipt,
    Outbound,
    PermanentDeliveryError,
)
from channels.discord.approvals import is_request, request_view
from channels.discord.errors import (
    NETWORK_ERRORS,
    THREAD_EXISTS,
    UNKNOWN_MESSAGE,
    WRONG_CHANNEL_TYPE,
    delivery_error,
)
from channels.discord.files import as_files, batches
from channels.discord.format import first_line, render, speaker
from channels.discord.live import DiscordLives
from channels.discord.threads import Threads

ARCHIVE_MINUTES: Final[Literal[1440]] = 1440  # threads we open hide after a day without messages
#: thread ids this process opened, kept so the next answer there needs no lookup; past
#: this the oldest goes (then discord.py's cache, or THREAD_EXISTS, tells it is open)
OPENED_MAX = 2_000
REPLY_META = "discord_reply_to"  # Outbound.meta: answer as a reply to this message id
_PROGRESS = "discord.posted."
LOOKUP_MARGIN = 60.0  # seconds before a try that its lookup reads from
LOOKUP_LIMIT = 100  # messages read by that lookup
#: one message: its text and the files on it
Part = tuple[str, list[Attachment]]

log = logging.getLogger(__name__)


#: the live message of the row's thread made its first part (channels/discord/live.py)
Adopt = Callable[[], Awaitable[Answer | None]]


@dataclass
class Place:
    channel: str
    thread: str | None = None
    reference: str | None = None
    refs: list[str] = field(default_factory=list)


@dataclass
class Progress:
    place: Place | None = None
    posted: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str) -> Progress:
        data = json.loads(raw)
        place = data.get("place")
        return cls(Place(**place) if place else None, [str(i) for i in data.get("posted", [])])


class Poster:
    def __init__(
        self,
        client: discord.Client,
        threads: Threads,
        store: ChannelStore,
        data_dir: Path = Path("."),
        lives: DiscordLives | None = None,
    ) -> None:
        self.client = client
        self.threads = threads
        self.store = store
        self.data_dir = data_dir
        #: answers shown while written: a row's first part finishes its live message
        self.lives = lives
        self._opened: Bounded[str, None] = Bounded(OPENED_MAX)  # oldest first

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        try:
            return await self._deliver(msg)
        except (discord.DiscordException, *NETWORK_ERRORS) as exc:
            raise delivery_error(exc) from exc

    async def _deliver(self, msg: Outbound) -> DeliveryReceipt:
        progress = self._progress(msg.id)
        if progress.place is None:
            progress.place = await self._place(msg)
        place = progress.place
        opens = msg.kind == "question" and place.thread is None and self._threadable(place)
        parts = self._with_files(render(msg, _hint(msg, place, opens)), msg)
        # one plain part needs no memory (its nonce makes a retry safe); several parts,
        # or a question whose thread opens after it is posted, do
        remember = len(parts) > 1 or opens
        request_id = str(msg.meta["approval_id"]) if is_request(msg) else None
        lives, first = self.lives, parts[0][0]
        adopt = None if lives is None else (lambda: lives.adopt(msg, place.channel, first))
        await self._post(msg.id, place, parts, progress, remember, request_id, adopt)
        if self.lives is not None:
            self.lives.forget(msg.target, progress.posted[0])
        if opens:
            place = progress.place = await self._thread_on_question(msg, place, progress.posted[0])
        if remember:
            self.store.delete_kv(_PROGRESS + msg.id)
        return DeliveryReceipt(platform_id=progress.posted[0], thread=place.thread, refs=place.refs)

    def _with_files(self, texts: list[str], msg: Outbound) -> list[Part]:
        """The text parts, the first batch of files on the last of them, each further
        batch a message of its own (a part too: its nonce and progress cover it)."""
        parts: list[Part] = [(text, []) for text in texts]
        groups = batches(msg.attachments, self.data_dir) if msg.attachments else []
        if groups:
            parts[-1] = (parts[-1][0], groups[0])
            parts.extend(("", group) for group in groups[1:])
        return parts

    def _progress(self, msg_id: str) -> Progress:
        raw = self.store.get_kv(_PROGRESS + msg_id)
        if raw is None:
            return Progress()
        try:
            return Progress.from_json(raw)
        except (ValueError, TypeError, AttributeError):
            log.error("Discord progress of %s is corrupt; posting the message whole", msg_id)
            return Progress()

    # -- where -----------------------------------------------------------------------
    async def _place(self, msg: Outbound) -> Place:
        target = msg.target
        channel_id = _snowflake(target.address)
        if target.thread:
            return await self._thread_place(target.address, target.thread, msg)
        channel = self.client.get_channel(channel_id)
        if isinstance(channel, discord.Thread) and channel.parent_id:
            # a thread named as a channel: its answers carry the thread's own key
            return Place(target.address, refs=[f"discord:{channel.parent_id}/{channel.id}"])
        return Place(target.address, reference=msg.meta.get(REPLY_META))

    async def _thread_place(self, parent: str, thread: str, msg: Outbound) -> Place:
        if not self._exists(thread):
            name = self.threads.names.get(thread) or first_line(msg.text)
            try:
                await self.client.http.start_thread_with_message(
                    parent, thread, name=name, auto_archive_duration=ARCHIVE_MINUTES
                )
            except discord.HTTPException as exc:
                if exc.status == 403 or exc.code == WRONG_CHANNEL_TYPE:
                    return Place(parent, reference=thread)  # answer beside the message
                if exc.code not in (THREAD_EXISTS, UNKNOWN_MESSAGE):
                    raise
                # THREAD_EXISTS: opened before; UNKNOWN_MESSAGE: an existing thread's own id
            self._open(thread)
            self.threads.names.pop(thread, None)
        self.threads.join(thread, parent)
        return Place(thread, thread=thread)

    async def _thread_on_question(self, msg: Outbound, place: Place, message_id: str) -> Place:
        name = first_line(f"{speaker(msg.agent)} asks: {msg.text}")
        try:
            await self.client.http.start_thread_with_message(
                place.channel, message_id, name=name, auto_archive_duration=ARCHIVE_MINUTES
            )
        except discord.HTTPException as exc:
            if exc.status == 403 or exc.code == WRONG_CHANNEL_TYPE:
                return place  # no thread: a Discord reply to the question still answers it
            raise
        self._open(message_id)
        self.threads.join(message_id, place.channel)
        return Place(place.channel, thread=message_id)

    def _open(self, thread: str) -> None:
        self._opened[thread] = None  # a thread opened again keeps its place

    def _exists(self, thread: str) -> bool:
        if thread in self._opened:
            return True
        return isinstance(self.client.get_channel(_snowflake(thread)), discord.Thread)

    def _threadable(self, place: Place) -> bool:
        channel = self.client.get_channel(_snowflake(place.channel))
        return isinstance(channel, discord.TextChannel)

    # -- the parts -------------------------------------------------------------------
    async def _post(
        self,
        msg_id: str,
        place: Place,
        parts: list[Part],
        progress: Progress,
        remember: bool,
        request_id: str | None = None,
        adopt: Adopt | None = None,
    ) -> None:
        channel = self.client.get_partial_messageable(_snowflake(place.channel))
        attempts = Attempts(self.store, msg_id)
        for part, batch in parts[len(progress.posted) :]:
            index = len(progress.posted)
            reference = None
            if place.reference and not progress.posted:
                reference = discord.MessageReference(
                    message_id=_snowflake(place.reference),
                    channel_id=_snowflake(place.channel),
                    fail_if_not_exists=False,
                )
            files = as_files(batch, self.data_dir) if batch else None
            extra: dict[str, Any] = {}
            if index == len(parts) - 1 and request_id:  # Approve / Deny under a request
                extra["view"] = request_view(request_id)

            async def post(
                part: str = part,
                reference: Any = reference,
                files: Any = files,
                extra: Any = extra,
                index: int = index,
            ) -> Answer:
                if index == 0 and adopt is not None and (adopted := await adopt()):
                    return adopted  # the live message, edited to this part
                sent = await channel.send(
                    part or None,
                    reference=reference,
                    nonce=_nonce(msg_id, index),
                    files=files,
                    **extra,
                )
                return {"id": str(sent.id)}

            async def find(
                tried: AttemptRow, part: str = part, batch: Any = batch
            ) -> Answer | None:
                return await self._find(channel, tried, part, [a.name for a in batch or []])

            answer = await attempts.once(str(index), post, find)
            progress.posted.append(str(answer["id"]))
            if remember:
                self.store.set_kv(_PROGRESS + msg_id, progress.to_json())

    async def _find(
        self, channel: discord.PartialMessageable, tried: AttemptRow, text: str, files: list[str]
    ) -> Answer | None:
        """A part tried without a recorded answer, read back from the channel: ours, with
        the same text and file names, from a minute before the try. (Its nonce covers a
        retry within Discord's few minutes; this covers a bot down for longer.)"""
        me = self.client.user
        if me is None or not tried.at:
            return None  # nothing to compare with: the nonce is the guard
        after = dt.datetime.fromtimestamp(tried.at - LOOKUP_MARGIN, dt.UTC)
        async for message in channel.history(after=after, limit=LOOKUP_LIMIT, oldest_first=True):
            names = [a.filename for a in message.attachments]
            if message.author.id == me.id and message.content == text and names == files:
                return {"id": str(message.id)}
        return None


def _nonce(msg_id: str, part: int) -> str:
    """The same for every try of one part: discord.py asks Discord to enforce it, and
    Discord answers a repeat within minutes with the message already posted (a post
    whose answer was lost, in a crash or a timeout, is not posted twice)."""
    return hashlib.blake2b(f"{msg_id}/{part}".encode(), digest_size=10).hexdigest()


def _hint(msg: Outbound, place: Place, opens_thread: bool) -> str | None:
    if msg.kind != "question":
        return None
    who = speaker(msg.agent)
    if place.thread:
        return f"Reply in this thread to answer {who}."
    if opens_thread:
        return f"Reply in the thread on this message to answer {who}."
    return f"Reply to this message to answer {who}."


def _snowflake(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise PermanentDeliveryError(
            f"{value!r} is not a Discord id: use discord:<channel_id>[/<thread_id>]"
        ) from None
