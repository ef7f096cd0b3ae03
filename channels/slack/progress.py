"""Slack's side of live progress (bot/core/progress.py): the status line in the thread
(`assistant.threads.setStatus`, renewed before Slack drops it after two minutes, naming
what runs), 👀 / ✅ reactions when SWITCHBOARD_ACK_REACTIONS is on, and the answer as
it is written (channels/slack/live.py).

A DM's top-level conversation has no thread: its status line goes under the person's
latest message there. Every call here is a courtesy: its failure is logged by the
progress seam and changes nothing else.
"""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Inbound, Target
from channels.slack.live import SlackLives

#: Slack drops a status line two minutes after it was set; renew it before then
REFRESH_SECONDS = 90.0


class SlackProgress:
    refresh_seconds = REFRESH_SECONDS

    def __init__(self, client: AsyncWebClient, lives: SlackLives) -> None:
        self.client = client
        self.lives = lives
        self._asked: dict[str, str] = {}  # target -> ts of the person's latest message
        self._suspended: set[str] = set()  # threads whose session waits for a person

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        thread = target.thread or self._asked.get(str(target))
        if thread:
            await self.client.assistant_threads_setStatus(
                channel_id=target.address, thread_ts=thread, status=status
            )

    async def suspended(self, target: Target, question: str) -> None:
        """A worker's question was posted in `target`'s thread: its agent session shows
        that it waits for a person (`suspended`) until someone answers there."""
        if target.thread:
            self._suspended.add(str(target))
            await self.client.agents_sessions_setStatus(
                channel_id=target.address,
                thread_ts=target.thread,
                status="suspended",
                title=question,
            )

    async def received(self, msg: Inbound, react: bool) -> None:
        channel, _, ts = msg.message_id.partition(":")
        self._asked[str(msg.reply_to)] = ts
        if str(msg.reply_to) in self._suspended:  # answered: the session is active again
            self._suspended.discard(str(msg.reply_to))
            target = msg.reply_to
            await self.client.agents_sessions_setStatus(
                channel_id=target.address, thread_ts=str(target.thread), status="active"
            )
        if react and ts:
            await self.client.reactions_add(channel=channel, timestamp=ts, name="eyes")

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        thread = target.thread or self._asked.pop(str(target), None)
        if thread:  # an empty status clears the line (a post of ours clears it too)
            await self.client.assistant_threads_setStatus(
                channel_id=target.address, thread_ts=thread, status=""
            )
        if msg is not None:
            channel, _, ts = msg.message_id.partition(":")
            await self.client.reactions_add(channel=channel, timestamp=ts, name="white_check_mark")

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        self.lives.feed(target, recipient, delta)

    def restart(self, target: Target) -> None:
        self.lives.restart(target)

    async def abandon(self, target: Target) -> None:
        await self.lives.abandon(target)
