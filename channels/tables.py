"""Markdown tables as aligned monospace blocks, for platforms that have no tables.

Slack's mrkdwn and Discord show a Markdown table as raw pipes. A GitHub-style table (a
header row, a `|---|` delimiter row with optional alignment colons, rows; outer pipes
optional) becomes a fenced code block whose columns line up by display width (an East
Asian wide character takes two columns). Nothing renders inside a code block, so inline
markdown in cells is reduced to its text, and a link keeps its address. Fenced code is
left alone. Shared by the Slack and Discord adapters; pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

Align = Literal["left", "center", "right"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PIPE = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r"^(:?)-+(:?)$")
#: what inline markdown leaves literal: a code span, a backslash-escaped character
_LITERAL = re.compile(r"(`+)(.+?)\1|\\([!-/:-@\[-`{-~])")
_KEPT = re.compile(r"\x00(\d+)\x00")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
#: the rest of inline markdown outside code spans, and its plain text, in order
_INLINE = [
    (re.compile(r"<br\s*/?>", re.IGNORECASE), " "),
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1"),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
    (re.compile(r"\*(?=\S)(.+?)(?<=\S)\*"), r"\1"),
    (re.compile(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)"), r"\1"),  # snake_case stays
]


def tables_as_code(markdown: str) -> str:
    """`markdown` with every table outside fenced code as an aligned code block."""
    lines, fence, i = markdown.split("\n"), "", 0
    out: list[str] = []
    while i < len(lines):
        end = 0 if fence else _table_end(lines, i)
        if end:
            out += aligned(lines[i:end])
            i = end
            continue
        fence = _fence_after(fence, lines[i])
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def _fence_after(fence: str, line: str) -> str:
    """The code fence open after `line` ("" for none), given the one open before it."""
    if not fence:
        opened = _FENCE.match(line)
        return opened.group(1) if opened else ""
    closing = line.strip()
    closes = closing and set(closing) == {fence[0]} and len(closing) >= len(fence)
    return "" if closes else fence


def _table_end(lines: list[str], start: int) -> int:
    """The index after the table whose header is `lines[start]`, or 0 for no table."""
    header = lines[start]
    if start + 1 >= len(lines) or not _PIPE.search(header) or header.startswith("    "):
        return 0
    aligns = _alignments(lines[start + 1])
    if aligns is None or len(aligns) != len(cells(header)):
        return 0
    end = start + 2
    while end < len(lines) and lines[end].strip() and _PIPE.search(lines[end]):
        end += 1
    return end


def _alignments(line: str) -> list[Align] | None:
    """Each column's alignment if `line` is a delimiter row (`|:--|--:|`), else None."""
    if not _PIPE.search(line):
        return None  # a lone `---` is a heading's underline or a rule, not a table
    found: list[Align] = []
    for cell in cells(line):
        marks = _DELIMITER_CELL.match(cell.replace(" ", ""))
        if not marks:
            return None
        left, right = marks.groups()
        found.append("center" if left and right else "right" if right else "left")
    return found


def cells(row: str) -> list[str]:
    """The cells of a table row, outer pipes dropped, `\\|` read as a pipe."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(inner)]


def aligned(rows: list[str]) -> list[str]:
    """A table's lines (header, delimiter, rows) as a code block with aligned columns;
    missing cells are empty and extra ones dropped, as GitHub renders them."""
    aligns = _alignments(rows[1]) or []
    table = [_padded([plain(c) for c in cells(row)], len(aligns)) for row in rows[:1] + rows[2:]]
    widths = [max(1, *(width(row[k]) for row in table)) for k in range(len(aligns))]
    head, *body = [_line(row, widths, aligns) for row in table]
    return ["```", head, "-+-".join("-" * w for w in widths), *body, "```"]


def _padded(row: list[str], n: int) -> list[str]:
    return (row + [""] * n)[:n]


def _line(row: list[str], widths: list[int], aligns: list[Align]) -> str:
    return " | ".join(map(_pad, row, widths, aligns)).rstrip()


def _pad(text: str, columns: int, align: Align) -> str:
    gap = columns - width(text)
    left = {"left": 0, "center": gap // 2, "right": gap}[align]
    return " " * left + text + " " * (gap - left)


def plain(cell: str) -> str:
    """A cell's text without its inline markdown. Code spans and escaped characters stand
    aside as numbered placeholders meanwhile, so `**`x`**` loses its stars, not its code."""
    kept: list[str] = []

    def keep(literal: re.Match[str]) -> str:
        kept.append(literal.group(3) or literal.group(2).strip())
        return f"\x00{len(kept) - 1}\x00"

    text = _plain_text(_LITERAL.sub(keep, cell.replace("\x00", "")))
    return _KEPT.sub(lambda m: kept[int(m.group(1))], text).replace("\t", " ")


def _plain_text(text: str) -> str:
    text = _LINK.sub(_link_text, _IMAGE.sub(r"\1", text))
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text


def _link_text(link: re.Match[str]) -> str:
    """A link's label and its address, which a code block cannot hide behind the label."""
    label, address = link.group(1), link.group(2)
    return label if label == address else f"{label} ({address})"


def width(text: str) -> int:
    """Columns `text` takes in a monospace font: wide East Asian characters two, marks
    and invisible format characters none."""
    return sum(_columns(char) for char in text)


def _columns(char: str) -> int:
    if unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
