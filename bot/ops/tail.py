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
    data, pos = _read_back(path, limit, before)
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


def scan_back(
    path: Path, limit: int, before: int | None, needles: list[bytes]
) -> tuple[list[tuple[int, bytes]], int]:
    """The lines holding every one of `needles` (lower case; matched in any case) among
    about the `limit` lines that end before byte `before`, newest first with their
    offsets, and the offset to go on from (0: none left). The first needle is found
    with `bytes.find` over the whole block: lines without it cost no Python work."""
    data, pos = _read_back(path, limit, before)
    skip = data.index(b"\n") + 1 if pos > 0 and b"\n" in data else 0
    low = data.lower()
    first, rest = (needles[0], needles[1:]) if needles else (b"", [])
    found: list[tuple[int, bytes]] = []
    at = low.find(first, skip)
    while at != -1:
        start = low.rfind(b"\n", skip, at) + 1 or skip
        end = low.find(b"\n", at)
        end = len(low) if end == -1 else end
        if all(n in low[start:end] for n in rest) and data[start:end].strip():
            found.append((pos + start, data[start:end]))
        at = low.find(first, end + 1) if end < len(low) else -1
    return found[::-1], pos + skip if pos > 0 else 0


def _read_back(path: Path, limit: int, before: int | None) -> tuple[bytes, int]:
    """The bytes of at least `limit` + 1 lines ending at `before` (else the file's end),
    and the offset they start at."""
    if limit <= 0 or not path.exists():
        return b"", 0
    blocks: list[bytes] = []
    lines = 0
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        pos = size if before is None else max(0, min(before, size))
        while pos > 0 and lines <= limit + 1:
            step = min(BLOCK, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            lines += block.count(b"\n")
            blocks.append(block)
    return b"".join(reversed(blocks)), pos
