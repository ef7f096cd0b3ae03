"""Split a long message at a platform's length limit without breaking code blocks.

Cuts prefer a blank line, then a line end, then a space; a hard cut is the last
resort. A cut inside a fenced code block closes the fence at the end of the chunk
and reopens it (with its language) at the start of the next, so every chunk
renders on its own. Shared by the Slack and Discord adapters.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def split_message(text: str, limit: int) -> list[str]:
    if limit < 20:
        raise ValueError("limit too small to split markdown safely")
    chunks: list[str] = []
    rest = text.strip("\n")
    while len(rest) > limit:
        fence = _open_fence(rest[:limit])
        budget = limit - (len(_closer(fence)) + 1 if fence else 0)
        cut = _cut_point(rest, budget)
        head = rest[:cut].rstrip("\n")
        fence = _open_fence(head)
        chunks.append(head + ("\n" + _closer(fence) if fence else ""))
        if len(fence) > limit // 4:  # a long info string would leave no room to progress
            fence = _closer(fence)
        rest = (fence + "\n" if fence else "") + rest[cut:].lstrip("\n")
    chunks.append(rest)
    return [c for c in chunks if c.strip()]


def _cut_point(body: str, budget: int) -> int:
    window = body[:budget]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > budget // 3:
            return at + len(sep)
    return budget


def _open_fence(text: str) -> str:
    """The opening fence line (e.g. "```python") left open at the end of `text`, or ""."""
    open_line = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if not m:
            continue
        if open_line and m.group(2).startswith(open_line.strip()[:3]) and not m.group(3).strip():
            open_line = ""
        elif not open_line:
            open_line = line.strip()
    return open_line


def _closer(fence: str) -> str:
    return re.match(r"(```+|~~~+)", fence).group(1) if fence else ""  # type: ignore[union-attr]
