"""Slack events to `Inbound` messages: which events are for the bot, and journaling them.

`SlackEvents.dispatch` runs before the event is acked and never waits on anything but
SQLite: it decides, journals through `ChannelContext.accept` and returns.

- For the bot: a mention (`app_mention`, or a `message` naming the bot), any direct
  message, and any message in a thread the bot is in. Everything else is not ours
  and is dropped without a trace (a busy workspace sends every channel message).
- Refused, with a `message.refused` event: other bots' messages and people not in
  SLACK_ALLOWED_USERS. The bot's own posts, echoed back by Slack, are dropped.
- One conversation per thread: `slack:<channel>/<thread_ts>`, a top-level mention
  starting a thread on its own ts. A DM's top-level messages are one conversation
  (`slack:<dm channel>`, answered at top level, as people chat in DMs); a thread
  inside a DM is its own conversation.
- Message id `<channel>:<ts>`: the `app_mention` and `message` copies of one post,
  and Slack's redeliveries, are journaled once.
- Slack's stop button (`agent_session_stopped`) is a `stop` from that person in that
  thread (a DM's at its top level, as its conversation is).
- Edits: an edit that adds the bot's mention to a message is handled as that
  message (people often fix a forgotten mention); other edits of messages for the
  bot are recorded as `message.edited` events and change nothing (the message was
  already answered). Deletes are recorded as `message.deleted`; nothing is retracted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from bot.seam import HUMAN, ChannelContext, Inbound, Sender, Target
from channels.slack.files import attachments
from channels.slack.identity import BotIdentity
from channels.slack.threads import ThreadMemory
from channels.slack.types import EventCallback, SlackEdit, SlackMessage

log = logging.getLogger(__name__)

KIND = "slack"
#: Message subtypes written by a person; others (joins, topic changes...) are not ours.
PERSON_SUBTYPES = {None, "file_share", "thread_broadcast", "me_message"}
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
#: (channel, ts, thread_ts, is_dm) of a message just journaled
Journaled = Callable[[str, str, str | None, bool], None]


class SlackEvents:
    def __init__(
        self,
        ctx: ChannelContext,
        threads: ThreadMemory,
        allowed_users: list[str],
        email_of: Callable[[str], str] = lambda user: "",
    ) -> None:
        self.ctx = ctx
        self.email_of = email_of
        self.threads = threads
        self.allowed = set(allowed_users)
        self.identity: BotIdentity | None = None
        #: told of each message journaled (in its transaction): catch-up's watermarks
        self.journaled: Journaled | None = None

    def dispatch(self, body: EventCallback) -> None:
        """Journal the event if it is for the bot. Raises only if journaling fails."""
        try:
            event = body["event"]
        except _MALFORMED as exc:
            self._malformed(exc)
            return
        self.take(event)

    def take(self, event: SlackEdit) -> None:
        """One event, live or read back from history (catch-up)."""
        try:
            if self.identity is None:
                raise ValueError("event before the bot knows who it is")
            self._event(event)
        except _MALFORMED as exc:  # acked anyway: a redelivery would be just as bad
            self._malformed(exc)

    def _malformed(self, exc: Exception) -> None:
        log.warning("malformed Slack event: %s", exc)
        self.ctx.refuse(KIND, "malformed event", error=f"{type(exc).__name__}: {exc}")

    def _event(self, event: SlackEdit) -> None:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "app_mention":
            self._message(event)
        elif kind == "message" and subtype == "message_changed":
            self._edited(event)
        elif kind == "message" and subtype == "message_deleted":
            self._deleted(event)
        elif kind == "message" and (subtype in PERSON_SUBTYPES or subtype == "bot_message"):
            self._message(event)
        elif kind == "agent_session_stopped":
            self._stop_button(event)

    def _stop_button(self, event: SlackMessage) -> None:
        """Slack's stop button: the person's `stop` in that thread (agents/team/stop.py)."""
        user, channel = event.get("user") or "", event["channel"]
        if self.allowed and user not in self.allowed:
            self.ctx.refuse(KIND, "user not in SLACK_ALLOWED_USERS", user=user)
            return
        thread = None if channel.startswith("D") else event.get("thread_ts")
        target = Target(KIND, channel, thread)
        stop = Inbound(
            channel=KIND,
            message_id=f"{channel}:stop:{event.get('event_ts') or event.get('thread_ts')}",
            conversation=str(target),
            sender=Sender(user, user),
            text="stop",
            reply_to=target,
        )
        with self.ctx.store.tx():
            self.ctx.accept(stop)

    # -- messages ----------------------------------------------------------------------
    def _message(self, event: SlackMessage) -> None:
        if self._from_self(event) or not self._for_bot(event):
            return
        refusal = self._refusal(event)
        if refusal is not None:
            who = event.get("user") or event.get("bot_id")
            self.ctx.refuse(KIND, refusal, user=who, id=_message_id(event))
            return
        msg = self._inbound(event)
        with self.ctx.store.tx():  # one commit before the ack
            accepted = self.ctx.accept(msg)
            if msg.reply_to.thread is not None and not _is_dm(event):
                self.threads.remember(msg.reply_to.address, msg.reply_to.thread)
            if accepted and self.journaled is not None:
                thread = event.get("thread_ts")
                self.journaled(event["channel"], event["ts"], thread and str(thread), _is_dm(event))

    def _for_bot(self, event: SlackMessage) -> bool:
        assert self.identity is not None
        if event.get("type") == "app_mention" or _is_dm(event):
            return True
        if self.identity.mentioned_in(event.get("text") or ""):
            return True
        thread = event.get("thread_ts")
        return bool(thread) and self.threads.knows(event["channel"], str(thread))

    def _from_self(self, event: SlackMessage) -> bool:
        assert self.identity is not None
        own_bot = bool(self.identity.bot_id) and event.get("bot_id") == self.identity.bot_id
        return own_bot or event.get("user") == self.identity.user_id

    def _refusal(self, event: SlackMessage) -> str | None:
        if event.get("bot_id") or event.get("subtype") == "bot_message":
            return "bot message"
        user = event.get("user")
        if not user:
            return "message without a user"
        if self.allowed and user not in self.allowed:
            return "user not in SLACK_ALLOWED_USERS"
        return None

    def _inbound(self, event: SlackMessage) -> Inbound:
        channel, ts = event["channel"], event["ts"]
        thread = event.get("thread_ts")
        # a channel mention starts a thread on its own ts; DMs stay at top level
        reply_to = Target(KIND, channel, thread if _is_dm(event) else (thread or ts))
        return Inbound(
            channel=KIND,
            message_id=_message_id(event),
            conversation=str(reply_to),
            sender=Sender(event["user"], _display_name(event), email=self.email_of(event["user"])),
            text=self._text(event),
            reply_to=reply_to,
            meta={"ts": ts, "thread_ts": thread},
            attachments=attachments(event.get("files") or []),
        )

    def _text(self, event: SlackMessage) -> str:
        """The text for the router: the leading mention of the bot stripped, so that
        `<@BOT> @Alice focus` reads `@Alice focus`; later mentions read as `@name`."""
        assert self.identity is not None
        own = re.compile(rf"<@{re.escape(self.identity.user_id)}(?:\|[^>]*)?>")
        text = (event.get("text") or "").strip()
        if own.match(text):
            text = own.sub("", text, count=1)
        text = own.sub(f"@{self.identity.name}", text).strip()
        files = event.get("files") or []
        if not text and files:
            text = f"(sent {len(files)} file(s) without a message)"
        return _unescape(text)

    # -- edits and deletes -------------------------------------------------------------
    def _edited(self, event: SlackEdit) -> None:
        assert self.identity is not None
        new = _inner(event, event.get("message"))
        old = event.get("previous_message") or {}
        if new.get("bot_id") or self._from_self(new):
            return  # link unfurls and edits of bot posts
        added = self.identity.mentioned_in(new.get("text") or "") and not (
            self.identity.mentioned_in(old.get("text") or "")
        )
        if added:
            self._message(new)
        elif self._for_bot(new):
            self.ctx.events.emit("message.edited", HUMAN, channel=KIND, id=_message_id(new))

    def _deleted(self, event: SlackEdit) -> None:
        old = _inner(event, event.get("previous_message"))
        old.setdefault("ts", event.get("deleted_ts", ""))
        if old.get("bot_id") or self._from_self(old):
            return
        if self._for_bot(old):
            self.ctx.events.emit("message.deleted", HUMAN, channel=KIND, id=_message_id(old))


def _inner(event: SlackEdit, source: SlackMessage | None) -> SlackMessage:
    """The message inside an edit/delete event, with the channel facts of the outer one."""
    inner = source.copy() if source else SlackMessage()
    inner["channel"] = event["channel"]
    if "channel_type" in event:
        inner["channel_type"] = event["channel_type"]
    return inner


def _is_dm(event: SlackMessage) -> bool:
    return event.get("channel_type") == "im" or str(event.get("channel", "")).startswith("D")


def _message_id(event: SlackMessage) -> str:
    return f"{event['channel']}:{event['ts']}"


def _display_name(event: SlackMessage) -> str:
    profile = event.get("user_profile") or {}
    return str(profile.get("display_name") or profile.get("real_name") or "")


def _unescape(text: str) -> str:
    """Slack escapes these three in message text; the model should see the characters."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
