"""One task's world: the real App, built as `switchboard run` builds it (Slack channel,
SQLite store in a temporary data dir), talking to a local Slack (`LocalSlack`) that
also serves the task's web pages; and what happened, for the checks to read.

The scripted person acts through the local Slack only (posts, answers, approvals), as
people do; the world watches the runtime's event log (tool calls, questions,
compactions) and its usage ledger (turns, tokens, cost), never the model's words to
itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.app import App
from bot.core.events import Event
from bot.evaluation.slack import BOT_USER, LocalSlack
from bot.settle import quiet
from bot.store.usage import UsageTotals
from config.settings import Settings

CHANNEL = "C0EVAL"  # where the person talks to the bot
PEOPLE = {"UANN": "Ann", "UBOB": "Bob"}  # Ann asks; Bob approves
MENTION = f"<@{BOT_USER}>"
POLL = 0.05
QUIET_POLLS = 4
GIVE_UP_POLLS = 20  # idle this long (1 s) with what a step waits for not there: it never comes


class Unmet(Exception):
    """A step waited in vain: the task's time ran out, or what it waited for never came."""


@dataclass
class World:
    app: App
    slack: LocalSlack
    deadline: float
    #: the thread the person talks in (the ts of their first post), by name
    threads: dict[str, str] = field(default_factory=dict)
    thread: str = ""
    events: list[Event] = field(default_factory=list)
    #: how many bot posts there were at a named moment (`mark`)
    marks: dict[str, int] = field(default_factory=dict)

    # -- what happened -----------------------------------------------------------------
    @property
    def posts(self) -> list[dict[str, Any]]:
        return self.slack.posts

    def replies(self, thread: str | None = None) -> list[dict[str, Any]]:
        """The bot's posts in a thread (the current one by default)."""
        ts = self.threads.get(thread, thread) if thread else self.thread
        return self.slack.in_thread(CHANNEL, ts)

    def tools(self, agent: str | None = None) -> list[dict[str, Any]]:
        """The tool calls made (the `tool.called` events), of one agent if named."""
        return [
            {"agent": e.agent_id, **e.data}
            for e in self.events
            if e.type == "tool.called" and (agent is None or e.agent_id.lower() == agent.lower())
        ]

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]

    def usage(self) -> UsageTotals:
        return self.app.store.usage.total(0)

    # -- the scripted person -----------------------------------------------------------
    async def say(self, text: str, thread: str = "", settle: bool = True) -> str:
        """Ann posts in the channel: a new thread (named `thread`) when it has no ts yet,
        else a reply in it. Waits for the bot's answer and (`settle`) until the agents
        are idle."""
        ts = self.threads.get(thread) if thread else None
        text = text.replace("{base}", self.slack.url)
        before = len(self.replies(ts)) if ts else 0
        heard = len(self.of_type("message.received"))
        posted = await self.slack.post(text if ts else f"{MENTION} {text}", "UANN", CHANNEL, ts)
        if ts is None:
            ts = posted
            if thread:
                self.threads[thread] = ts
        self.thread = ts
        await self.until(lambda: len(self.of_type("message.received")) > heard, "the bot to hear")
        await self.expect(lambda: len(self.replies(ts)) > before, "an answer in the thread")
        if settle:
            await self.settle()
        return posted

    async def answer(self, text: str, user: str = "UANN") -> None:
        """Reply in the current thread without waiting for anything (an answer to a
        question, an approval)."""
        await self.slack.post(text, user, CHANNEL, self.thread)

    async def post_elsewhere(self, text: str, channel: str, user: str = "UANN") -> None:
        """A person talks in another channel, not to the bot."""
        await self.slack.post(text, user, channel)

    def mark(self, name: str) -> None:
        self.marks[name] = len(self.posts)

    def since(self, name: str, channel: str | None = None) -> list[dict[str, Any]]:
        """The bot's posts after the mark `name`, up to the next mark (in `channel`)."""
        start = self.marks[name]
        end = min((n for n in self.marks.values() if n > start), default=len(self.posts))
        return [p for p in self.posts[start:end] if channel is None or p["channel"] == channel]

    # -- waiting -------------------------------------------------------------------------
    async def until(self, check: Callable[[], bool], what: str) -> None:
        while not check():
            if time.monotonic() > self.deadline:
                raise Unmet(f"timed out waiting for {what}")
            await asyncio.sleep(POLL)

    async def expect(self, check: Callable[[], bool], what: str) -> None:
        """Until `check` holds; when the agents are idle and it still does not, what was
        expected will not come (the model did not do it): raise `Unmet` at once."""
        calm = 0
        while not check():
            if calm >= GIVE_UP_POLLS:
                raise Unmet(f"{what} never came")
            if time.monotonic() > self.deadline:
                raise Unmet(f"timed out waiting for {what}")
            await asyncio.sleep(POLL)
            calm = calm + 1 if self._idle() else 0

    def _idle(self) -> bool:
        return quiet(self.app, "") and not self.app.store.outbox.outbox_counts().get("pending")

    async def settle(self) -> None:
        """Until no agent has work under way and nothing waits to be delivered, for a few
        polls in a row (a parked worker or a pending approval is not work)."""
        calm = 0
        while calm < QUIET_POLLS:
            if time.monotonic() > self.deadline:
                raise Unmet("timed out waiting for the agents to finish")
            await asyncio.sleep(POLL)
            calm = calm + 1 if self._idle() else 0

    async def event(self, kind: str, count: int = 1) -> Event:
        await self.expect(lambda: len(self.of_type(kind)) >= count, f"a {kind} event")
        return self.of_type(kind)[count - 1]


@contextlib.asynccontextmanager
async def world(settings: Settings, pages: dict[str, str], seconds: float) -> AsyncIterator[World]:
    """A started App on the local Slack; stopped (and the Slack with it) on the way out."""
    slack = LocalSlack(PEOPLE)
    await slack.start([web.get(f"/pages/{name}", _page(body)) for name, body in pages.items()])
    try:
        app = App(settings.model_copy(update=slack.settings()), ["slack"])
        app.build()
        recorded = World(app, slack, time.monotonic() + seconds)
        app.events.subscribe(recorded.events.append)
        await app.start()
        servers = len(app.settings.mcp_servers)
        try:
            await recorded.until(lambda: slack.connected, "the Slack connection")
            await recorded.until(
                lambda: len(recorded.of_type("mcp.connected")) >= servers, "the MCP servers"
            )
            yield recorded
        finally:
            await app.stop()
    finally:
        await slack.stop()


def _page(body: str) -> Callable[[web.Request], Any]:
    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/html")

    return serve
