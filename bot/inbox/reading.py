"""Reading what people said in a channel: the seam behind the `read_channel` tool.

A channel that can read its platform's history offers `read_history(target, since,
limit) -> Page` (Slack: conversations.history / replies; Discord: channel history;
email: the journal). A `Line` is one message: when, who, the text, the files it
carried. `ReadRefused` carries a sentence for the model (not in the channel, not
allowed, unknown channel). `render` turns a page into the lines the model reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from bot.core.messages import Target

MAX_LINES = 500
TEXT_MAX = 2_000  # one message's text, as the model reads it


class ReadRefused(Exception):
    """The channel cannot be read; the text says why and what to do."""


@dataclass(frozen=True, slots=True)
class Line:
    at: float
    who: str
    text: str
    files: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Page:
    lines: list[Line]
    #: older messages were left out (the limit, or the page cap, was reached)
    cut: bool = False


@runtime_checkable
class Reader(Protocol):
    async def read_history(self, target: Target, since: float | None, limit: int) -> Page: ...


def render(target: Target, page: Page, limit: int) -> str:
    if not page.lines:
        return f"No messages in {target} for that time."
    lines = [_line(line) for line in sorted(page.lines, key=lambda line: line.at)]
    head = f"{len(lines)} message(s) in {target}, oldest first:"
    if page.cut:
        head += (
            f" (cut: only the newest {limit} are shown; pass a later `since` or a higher "
            f"`limit`, at most {MAX_LINES}, to see more)"
        )
    return "\n".join([head, *lines])


def _line(line: Line) -> str:
    when = datetime.fromtimestamp(line.at, UTC).strftime("%Y-%m-%d %H:%M")
    text = " ".join(line.text.split())
    if len(text) > TEXT_MAX:
        text = text[:TEXT_MAX] + "..."
    files = f" [files: {', '.join(line.files)}]" if line.files else ""
    return f"{when} UTC {line.who}: {text}{files}"
