"""`read_channel(target, since?, limit?)`: what people said in a channel or thread.

The tool reads through the channel adapter that serves the target's kind (its
`read_history`, see `bot/inbox/reading.py`), so it covers the whole channel, not only the
bot's own conversations: what a scheduled summary of #ops needs. `since` is an ISO
8601 time (UTC when it names no zone) or an age like `24h`, `90m` or `7d`.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from agents.loop.marking import untrusted
from agents.services import AgentInfo, Services, ToolFactory
from agents.tools.toolbox import INT, STR, Tool, ToolError, ToolSpec, arg, schema
from bot.core.messages import Target, TargetError
from bot.inbox.reading import MAX_LINES, Reader, ReadRefused, render

DEFAULT_LINES = 100
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

READ_CHANNEL = ToolSpec(
    "read_channel",
    "Read what people said in a channel or thread the bot can see, not only to you: for a "
    "channel's summary. The bot's own conversations and work: read_activity.",
    schema(
        {
            "target": arg(
                STR,
                "slack:C123, slack:C123/1700.1 (thread), discord:123[/456], email:a@x.org "
                "(mail both ways)",
            )
        },
        {
            "since": arg(STR, "ISO time or age: 24h, 7d"),
            "limit": arg(
                INT,
                f"newest kept (default {DEFAULT_LINES}, max {MAX_LINES})",
                minimum=1,
            ),
        },
    ),
)


def since_of(raw: str | None, now: float) -> float | None:
    if not raw:
        return None
    age = _AGE.match(raw.lower())
    if age is not None:
        return now - float(age.group(1)) * _UNIT[age.group(2)]
    try:
        when = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"since {raw!r} is neither an ISO time (2026-11-22T09:00) nor an age (24h, 7d)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def read_channel_tools(services: Services) -> ToolFactory:
    async def handler(args: dict[str, Any]) -> str:
        try:
            target = Target.parse(args["target"])
        except TargetError as exc:
            raise ToolError(str(exc)) from exc
        reader = services.human.outbox.channels.get(target.kind)
        if not isinstance(reader, Reader):
            raise ToolError(f"{target.kind} is not a channel I can read here (not configured?)")
        limit = min(int(args.get("limit") or DEFAULT_LINES), MAX_LINES)
        since = since_of(args.get("since"), time.time())
        try:
            page = await reader.read_history(target, since, limit)
        except ReadRefused as exc:
            raise ToolError(str(exc)) from exc
        head, _, lines = render(target, page, limit).partition("\n")
        return f"{head}\n{untrusted(lines, f'history of {target}')}" if lines else head

    def tools(info: AgentInfo) -> list[Tool]:
        return [Tool(READ_CHANNEL, handler)]

    return tools
