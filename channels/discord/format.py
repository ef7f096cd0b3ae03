"""How an agent's message looks in Discord: who speaks, Discord's markdown, 2,000-char parts.

Discord renders most markdown itself, so the text passes through except what it
would show raw: headings deeper than `###` become bold lines and tables become aligned
code blocks (Discord has no tables; channels/tables.py). Parts are cut
with `channels.split.split_message`, which keeps code blocks whole across parts.
Pure functions; no I/O.
"""

from __future__ import annotations

import re

from bot.seam import Outbound
from channels.split import split_message
from channels.tables import tables_as_code

THREAD_NAME_MAX = 100

LIMIT = 2000  # Discord's maximum message length
_FENCE = re.compile(r"^\s*(```|~~~)")
_DEEP_HEADING = re.compile(r"^\s*#{4,6}\s+(.+?)\s*#*\s*$")


def render(msg: Outbound, hint: str | None = None) -> list[str]:
    """The parts to post, in order; the first names the speaker."""
    body = to_discord_markdown(msg.text.strip()) or "(empty message)"
    label = speaker(msg.agent) + (" asks:" if msg.kind == "question" else ":")
    joiner = "\n" if _starts_block(body) else " "
    text = f"**{label}**{joiner}{body}"
    if hint:
        text += f"\n-# {hint}"
    return split_message(text, LIMIT)


def speaker(agent: str) -> str:
    return agent[:1].upper() + agent[1:]


def to_discord_markdown(text: str) -> str:
    out: list[str] = []
    in_code = False
    for line in tables_as_code(text).split("\n"):
        if _FENCE.match(line):
            in_code = not in_code
        heading = None if in_code else _DEEP_HEADING.match(line)
        out.append(f"**{heading.group(1)}**" if heading else line)
    return "\n".join(out)


def _starts_block(body: str) -> bool:
    first = body.split("\n", 1)[0]
    return bool(_FENCE.match(first) or first.startswith(("#", ">", "- ", "* ", "1. ")))


def first_line(text: str) -> str:
    """A thread name: the text's first line, cut to Discord's 100 characters."""
    first = text.strip().split("\n", 1)[0].strip() or "Switchboard"
    return first if len(first) <= THREAD_NAME_MAX else first[: THREAD_NAME_MAX - 3] + "..."
