"""MESSAGE_CREATE -> `Inbound`: which messages are for us, and which conversation they are.

For us: a direct message, a message that mentions the bot (its user, or its managed
role), or any message in a thread the bot is in. Never: our own posts (the gateway
echoes them), other bots' and webhooks' posts, system messages (pins, joins, thread
notices). DISCORD_ALLOWED_USERS and DISCORD_ALLOWED_CHANNELS refuse the rest, as
events (`message.refused`) when they address the bot; chatter not addressed to the bot
and our own echoes are not ours to record.

Conversations (the core's key, and where replies go):
- a DM: `discord:<dm_channel>`;
- a thread: `discord:<parent>/<thread>`;
- a mention in a channel: a new conversation `discord:<channel>/<message_id>`. Discord
  gives a thread started from a message that message's id, so the reply opens that
  thread on the mention and follow-ups there carry the same key, like a Slack thread.

The person's message is journaled (`ChannelContext.accept`) before anything else is
done with it. Touches only the channel context and the thread registry.
"""

from __future__ import annotations

import logging
import re

import discord

from bot.seam import SYSTEM_SPEAKER, ChannelContext, Inbound, Outbound, Sender, Target
from channels.discord.files import attachments
from channels.discord.format import first_line
from channels.discord.threads import Threads

log = logging.getLogger(__name__)

KIND = "discord"
DM_ENTRY = "dm"  # in DISCORD_ALLOWED_CHANNELS: direct messages are allowed too
_PERSON_MESSAGES = (discord.MessageType.default, discord.MessageType.reply)
_USER_MENTION = re.compile(r"<@!?(\d+)>")
EMPTY_MENTION = "You mentioned me without a message: write what you need after the mention."


class Intake:
    def __init__(
        self,
        ctx: ChannelContext,
        threads: Threads,
        allowed_users: list[str],
        allowed_channels: list[str],
    ) -> None:
        self.ctx = ctx
        self.threads = threads
        self.allowed_users = set(allowed_users)
        self.allowed_channels = set(allowed_channels)

    def on_message(self, message: discord.Message, me: discord.ClientUser) -> Inbound | None:
        """Journal the message if it is for the bot; the message journaled, if new."""
        # our own posts come back from the gateway: never an event, never a message
        if message.author.id == me.id or not self._addressed(message, me):
            return None
        refusal = self._refusal(message)
        if refusal is not None:
            self.ctx.refuse(
                KIND,
                refusal,
                id=str(message.id),
                sender=str(message.author.id),
                where=str(message.channel.id),
            )
            return None
        return self._accept(message, me)

    # -- filters ---------------------------------------------------------------------
    def _addressed(self, message: discord.Message, me: discord.ClientUser) -> bool:
        if message.type not in _PERSON_MESSAGES:
            return False
        if message.guild is None or _mentions_me(message, me):
            return True
        return self.threads.is_ours(str(message.channel.id), _maybe_thread(message.channel))

    def _refusal(self, message: discord.Message) -> str | None:
        if message.author.bot or message.webhook_id is not None:
            return "bot message"
        if self.allowed_users and str(message.author.id) not in self.allowed_users:
            return "user not in DISCORD_ALLOWED_USERS"
        if self.allowed_channels and not (_channel_ids(message) & self.allowed_channels):
            return "channel not in DISCORD_ALLOWED_CHANNELS"
        return None

    # -- the inbound message ---------------------------------------------------------
    def _accept(self, message: discord.Message, me: discord.ClientUser) -> Inbound | None:
        text = _text(message, me)
        conversation, reply_to = self._conversation(message)
        files = attachments(message.attachments)
        if not text and not files:
            self._answer_empty(message, conversation)
            return None
        text = text or f"(sent {len(files)} file(s) without a message)"
        inbound = Inbound(
            channel=KIND,
            message_id=str(message.id),
            conversation=conversation,
            sender=Sender(str(message.author.id), message.author.display_name),
            text=text,
            reply_to=reply_to,
            thread_refs=_refs(message),
            meta={
                "guild": str(message.guild.id) if message.guild else None,
                "channel": str(message.channel.id),  # where to catch up after a gap
            },
            attachments=files,
        )
        if not self.ctx.accept(inbound):
            return None
        if reply_to.thread is not None:
            self.threads.note(reply_to.thread, reply_to.address)
            if reply_to.thread == inbound.message_id:  # the reply opens a thread on it
                self.threads.name(reply_to.thread, first_line(text))
        return inbound

    def _conversation(self, message: discord.Message) -> tuple[str, Target]:
        channel = message.channel
        channel_id = str(channel.id)
        if message.guild is None:
            target = Target(KIND, channel_id)
        elif isinstance(channel, discord.Thread) and channel.parent_id is not None:
            target = Target(KIND, str(channel.parent_id), channel_id)
        elif (parent := self.threads.parent(channel_id, _maybe_thread(channel))) is not None:
            target = Target(KIND, parent, channel_id)  # a thread of ours not in discord.py's cache
        else:
            target = Target(KIND, channel_id, str(message.id))
        return str(target), target

    def _answer_empty(self, message: discord.Message, conversation: str) -> None:
        self.ctx.refuse(KIND, "empty message", id=str(message.id), sender=str(message.author.id))
        self.ctx.notify(
            Outbound(
                SYSTEM_SPEAKER,
                Target(KIND, str(message.channel.id)),
                EMPTY_MENTION,
                conversation,
                kind="notice",
                meta={"discord_reply_to": str(message.id)},
                id=f"discord-empty-{message.id}",  # once, even if the message comes again
            )
        )


def _mentions_me(message: discord.Message, me: discord.ClientUser) -> bool:
    if any(user.id == me.id for user in message.mentions):
        return True
    role = message.guild.self_role if message.guild is not None else None
    return role is not None and role in message.role_mentions


def _channel_ids(message: discord.Message) -> set[str]:
    if message.guild is None:
        return {DM_ENTRY, str(message.channel.id)}
    parent = getattr(message.channel, "parent_id", None)
    return {str(message.channel.id)} | ({str(parent)} if parent else set())


def _text(message: discord.Message, me: discord.ClientUser) -> str:
    """The words for the router: our leading mention dropped, other mentions as @Name."""
    own = {f"<@{me.id}>", f"<@!{me.id}>"}
    role = message.guild.self_role if message.guild is not None else None
    if role is not None:
        own.add(role.mention)
    text = message.content.strip()
    while any(text.startswith(tag) for tag in own):
        tag = next(t for t in own if text.startswith(t))
        text = text[len(tag) :].lstrip(" ,:\n")
    names = {str(u.id): u.display_name for u in message.mentions}
    names[str(me.id)] = me.display_name
    return _USER_MENTION.sub(lambda m: "@" + names.get(m.group(1), m.group(1)), text).strip()


def _refs(message: discord.Message) -> list[str]:
    ref = message.reference
    return [str(ref.message_id)] if ref is not None and ref.message_id else []


def _maybe_thread(channel: object) -> bool:
    """A thread, or a channel discord.py does not know (a thread not in its cache): a
    guild's own channels are always in its cache."""
    return not isinstance(channel, discord.abc.GuildChannel)
