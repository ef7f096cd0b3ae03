"""Slack's `/switchboard` slash command and the bot's App Home tab.

`/switchboard status` answers with what the person's own conversations hold (their
workers, questions, approvals and triggers; everyone else's only counted: operators see
all on the dashboard); `/switchboard new`
in a DM starts a fresh conversation there (it is taken in like the message `new`);
`/switchboard catchup` lists what the agents said in the person's conversations since
they last spoke (docs/conversations.md); `/switchboard help` (or anything else) says
what it can do. The answer rides on the
acknowledgement itself (Socket Mode envelope ack, or the HTTP 200's body), so it
comes within Slack's 3 seconds and only the person who typed it sees it.

The Home tab (`app_home_opened`) is published with `views.publish`: which of the
person's workers run, what waits for whom in their conversations (open questions) and
which of their tool calls wait for approval; the rest is a count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import ChannelContext, Inbound, Mine, Sender, Target, ago

log = logging.getLogger(__name__)

KIND = "slack"
COMMAND = "/switchboard"
MAX_TEXT = 2900  # a section's text is at most 3000 characters
MAX_ROWS = 25  # per Home section (a view holds at most 100 blocks)
HELP = (
    "`/switchboard status`: your conversations' workers, open questions, approvals and "
    "triggers; channel health.\n"
    "`/switchboard new`: in a DM with me, start a fresh conversation (the earlier one is "
    "archived; what I remember stays).\n"
    "`/switchboard catchup`: what the agents said to you since you last spoke (answers, "
    "results, questions waiting for you).\n"
    "`/switchboard help`: this text. Talk to me by mentioning me, or in a DM."
)
NEW_IN_CHANNEL = (
    "In a channel every thread is its own conversation: mention me to start a new one. "
    "`/switchboard new` starts afresh in a DM with me."
)
NOT_ALLOWED = "You are not in SLACK_ALLOWED_USERS; nothing was changed."


def register(
    app: AsyncApp, client: AsyncWebClient, ctx: ChannelContext, allowed: list[str]
) -> None:
    """The command and the Home tab; call before the catch-all event listener."""

    async def on_command(command: dict[str, Any], ack: AsyncAck) -> None:
        await ack(text=answer(ctx, command, allowed), response_type="ephemeral")

    async def on_home(event: dict[str, Any], ack: AsyncAck) -> None:
        await ack()
        user = str(event.get("user", ""))
        if user and (not allowed or user in allowed):
            await publish(client, user, ctx.waiting_for(KIND, user))

    app.command(COMMAND)(on_command)
    app.event("app_home_opened")(on_home)


def answer(ctx: ChannelContext, command: dict[str, Any], allowed: list[str]) -> str:
    """The reply to `/switchboard <text>` (runs before the ack: nothing here waits)."""
    user = str(command.get("user_id", ""))
    if allowed and user not in allowed:
        return NOT_ALLOWED
    word = str(command.get("text", "")).strip().lower()
    if word == "status":
        return "```" + ctx.status_for(KIND, user)[:MAX_TEXT] + "```"
    if word == "new":
        return _fresh(ctx, command, user)
    if word == "catchup":
        return ctx.catchup_for(KIND, user, link, _escape, room=MAX_TEXT)
    return HELP


def _fresh(ctx: ChannelContext, command: dict[str, Any], user: str) -> str:
    channel = str(command.get("channel_id", ""))
    if not channel.startswith("D"):
        return NEW_IN_CHANNEL
    target = Target(KIND, channel)
    ctx.accept(
        Inbound(
            channel=KIND,
            message_id=f"command:{command.get('trigger_id') or time.time()}",
            conversation=str(target),
            sender=Sender(user, str(command.get("user_name", ""))),
            text="new",
            reply_to=target,
        )
    )
    return "Starting a new conversation here."


async def publish(client: AsyncWebClient, user: str, waiting: Mine) -> None:
    try:
        await client.views_publish(user_id=user, view=home_view(waiting))
    except SlackApiError as exc:
        log.warning("views.publish for %s failed: %s", user, exc.response.get("error"))


def home_view(waiting: Mine) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Switchboard"}},
        _context(f"Updated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"),
    ]
    blocks += _section(
        "What runs", waiting.workers, "No worker is running.",
        lambda w: f"*{w[0]}* ({w[1]}, since {ago(w[3])}): {w[2]}",
    )  # fmt: skip
    blocks += _section(
        "Waiting for people", waiting.questions, "Nobody is waited for.",
        lambda q: f"*{q[0]}* asks in `{q[2]}` ({ago(q[3])}): {q[1]}",
    )  # fmt: skip
    blocks += _section(
        "Pending approvals", waiting.approvals, "No tool call waits.",
        lambda a: f"*{a[0]}* wants to run `{a[1]}` (in `{a[2]}`, {ago(a[3])})",
    )  # fmt: skip
    if waiting.elsewhere:
        blocks += [{"type": "divider"}, _context(waiting.elsewhere)]
    return {"type": "home", "blocks": blocks}


def _section(
    title: str,
    rows: list[tuple[str, str, str, float]],
    empty: str,
    line: Callable[[tuple[str, str, str, float]], str],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "divider"},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{title}* ({len(rows)})"}},
    ]
    shown = rows[:MAX_ROWS]
    out += [
        {"type": "section", "text": {"type": "mrkdwn", "text": _escape(line(r))[:MAX_TEXT]}}
        for r in shown
    ]
    if not rows:
        out.append(_context(empty))
    elif len(rows) > len(shown):
        out.append(_context(f"and {len(rows) - len(shown)} more (see the dashboard)"))
    return out


def link(target: str) -> str:
    """A Slack target as Slack links it: `<#C1>` (and which thread), others as written."""
    kind, _, rest = target.partition(":")
    if kind != KIND or not rest:
        return _escape(target)
    channel, _, thread = rest.partition("/")
    return f"<#{channel}>" + (f" (thread {thread})" if thread else "")


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _escape(text: str) -> str:
    """Slack's three control characters, so text people wrote shows as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
