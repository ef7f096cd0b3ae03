"""Slack's side of live progress (bot/core/progress.py): the status line in the thread
(`assistant.threads.setStatus`, renewed before Slack drops it after two minutes, naming
what runs), 👀 / ✅ reactions when SWITCHBOARD_ACK_REACTIONS is on, and the answer as
it is written (channels/slack/live.py).

A DM's top-level conversation has no thread: its status line goes under the person's
latest message there. Every call here is a courtesy: its failure is logged by the
progress seam and changes nothing else.

Slack takes a thread's status line down itself when the app sends a message there
(`assistant.threads.setStatus`: "removed if no message has been sent" within two
minutes), so the end of a turn that answered costs no call: `finished` waits
CLEAR_AFTER_SECONDS for the answer's post (the outbox delivers it just after the turn)
and clears the line only if nothing was posted there since it was set (a silent turn).
"""

from __future__ import annotations

import asyncio

from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Bounded, Inbound, Target
from channels.slack.live import SlackLives

#: Slack drops a status line two minutes after it was set; renew it before then
REFRESH_SECONDS = 90.0
#: how long the end of a turn waits for its answer's post before clearing the line itself
CLEAR_AFTER_SECONDS = 2.0
#: bound of `_shown` (threads whose line is up), `_asked` (places a person wrote in) and
#: `_suspended` (threads waiting for an answer): the oldest are forgotten beyond it
SHOWN_MAX = 10_000


class SlackProgress:
    refresh_seconds = REFRESH_SECONDS

    def __init__(self, client: AsyncWebClient, lives: SlackLives) -> None:
        self.client = client
        self.lives = lives
        #: target -> ts of the person's latest message
        self._asked: Bounded[str, str] = Bounded(SHOWN_MAX)
        #: threads whose session waits for a person (the oldest leaves first)
        self._suspended: Bounded[str, None] = Bounded(SHOWN_MAX)
        #: (channel, thread) -> a token per status set there, until a post takes it down
        self._shown: Bounded[tuple[str, str], object] = Bounded(SHOWN_MAX)

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        thread = target.thread or self._asked.get(str(target))
        if thread:
            await self.client.assistant_threads_setStatus(
                channel_id=target.address, thread_ts=thread, status=status
            )
            self._shown.put((target.address, thread), object())

    def posted(self, channel: str, thread: str | None) -> None:
        """The app sent a message in `thread` (channel id): Slack took its line down."""
        if thread:
            self._shown.pop((channel, thread), None)

    async def suspended(self, target: Target, question: str) -> None:
        """A worker's question was posted in `target`'s thread: its agent session shows
        that it waits for a person (`suspended`) until someone answers there."""
        if target.thread:
            self._suspended.put(str(target), None)
            await self.client.agents_sessions_setStatus(
                channel_id=target.address,
                thread_ts=target.thread,
                status="suspended",
                title=question,
            )

    async def received(self, msg: Inbound, react: bool) -> None:
        channel, _, ts = msg.message_id.partition(":")
        self._asked.put(str(msg.reply_to), ts)
        if str(msg.reply_to) in self._suspended:  # answered: the session is active again
            del self._suspended[str(msg.reply_to)]
            target = msg.reply_to
            await self.client.agents_sessions_setStatus(
                channel_id=target.address, thread_ts=str(target.thread), status="active"
            )
        if react and ts:
            await self.client.reactions_add(channel=channel, timestamp=ts, name="eyes")

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        thread = target.thread or self._asked.pop(str(target), None)
        if msg is not None:
            channel, _, ts = msg.message_id.partition(":")
            await self.client.reactions_add(channel=channel, timestamp=ts, name="white_check_mark")
        where = (target.address, thread or "")
        token = self._shown.get(where)
        if token is None or not thread:
            return
        await asyncio.sleep(CLEAR_AFTER_SECONDS)
        if self._shown.get(where) is token:  # no post since, no new turn: clear it
            del self._shown[where]
            await self.client.assistant_threads_setStatus(
                channel_id=target.address, thread_ts=thread, status=""
            )

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        self.lives.feed(target, recipient, delta)

    def restart(self, target: Target) -> None:
        self.lives.restart(target)

    async def abandon(self, target: Target) -> None:
        await self.lives.abandon(target)
