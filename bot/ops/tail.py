"""The newest events of `events.jsonl`, read backwards from the end in pages.

The log only grows (100,000 events is tens of megabytes): the dashboard reads the
last page from the end of the file, and older pages by byte offset, never the whole
file.
"""

from __future__ import annotations

from pathlib import Path

from bot.core.events import Event, parse_line

BLOCK = 65536


def tail(path: Path, limit: int, before: int | None = None) -> tuple[list[Event], int]:
    """Up to `limit` events that end before byte `before` (default: the end of the
    file), newest first, and the offset of the page before them (0: none left)."""
    placed, older = tail_placed(path, limit, before)
    return [e for _, e in placed], older


def tail_placed(
    path: Path, limit: int, before: int | None = None
) -> tuple[list[tuple[int, Event]], int]:
    """As `tail`, each event with the byte offset its line starts at."""
    if limit <= 0 or not path.exists():
        return [], 0
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        end = size if before is None else max(0, min(before, size))
        pos, data = end, b""
        while pos > 0 and data.count(b"\n") <= limit + 1:
            step = min(BLOCK, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
    entries: list[tuple[int, bytes]] = []
    start = pos
    for piece in data.split(b"\n"):
        entries.append((start, piece))
        start += len(piece) + 1
    if pos > 0:
        entries = entries[1:]  # the first piece may be the end of a longer line
    entries = [(offset, line) for offset, line in entries if line.strip()]
    page = entries[-limit:]
    more = bool(page) and (pos > 0 or len(entries) > len(page))
    parsed = ((offset, parse_line(line)) for offset, line in reversed(page))
    return [(o, e) for o, e in parsed if e is not None], page[0][0] if more else 0
