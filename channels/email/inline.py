"""Answers written between quoted parts, kept with the lines they answer.

A person who answers three questions writes under each quoted question. reply.py
collects those answers as `Segment`s (the quote block read above an answer, then the
answer); `render` gives them back with the quoted question lines each one answers as
context ("> Which region?" then "EU"), so the reader knows what "EU" and "Four" answer.
A plain bottom-post under a long quote gets no context unless that quote asks a
question. Quotes are `>` (what clients and the HTML converter write for a blockquote)
or `|` (some clients, under an attribution line). Pure functions of text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CONTEXT_LINES = 3  # the quoted lines shown above one answer, at the most
_MARK = re.compile(r"^\s*(?:[>|][ \t]?)+")
#: the HTML converter's escapes in a quoted line ("1\. Which region?")
_ESCAPE = re.compile(r"\\([.\-*_#+!\[\]()`])")


@dataclass(slots=True)
class Segment:
    """One answer below a quote block: the block's lines as written, then the answer."""

    quote: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)


def is_quote(line: str, pipes: bool = False) -> bool:
    """A `>` quote line; with `pipes`, a `|` one too (bare `|`, or `| text`)."""
    s = line.strip()
    return s.startswith(">") or (pipes and (s == "|" or s.startswith("| ")))


def render(segments: list[Segment]) -> list[str]:
    """The answers as lines, each under the quoted lines it answers when they are
    interleaved (or the quote asks); else the answers alone, as today's readers expect."""
    said = [s for s in segments if any(x.strip() for x in s.answer)]
    interleaved = len(said) > 1
    out: list[str] = []
    for seg in segments:
        context = _context(seg.quote) if seg in said else []
        if context and (interleaved or any("?" in x for x in context)):
            if not out or out[-1].strip():
                out.append("")
            out.extend(f"> {x}" for x in context)
        out.extend(seg.answer)
    return out


def _context(quote: list[str]) -> list[str]:
    """What an answer answers: the last paragraph of its quote block that asks a
    question, up to its last question (a name signed below it is no part of it), else
    the last paragraph; unquoted, its last CONTEXT_LINES lines."""
    paragraphs: list[list[str]] = [[]]
    for line in quote:
        text = _ESCAPE.sub(r"\1", _MARK.sub("", line)).strip()
        if text:
            paragraphs[-1].append(text)
        elif paragraphs[-1]:
            paragraphs.append([])
    found = [p for p in paragraphs if p]
    asking = [p for p in found if any("?" in x for x in p)]
    if asking:
        chosen = asking[-1]
        last = max(k for k, x in enumerate(chosen) if "?" in x)
        return chosen[: last + 1][-CONTEXT_LINES:]
    return found[-1][-CONTEXT_LINES:] if found else []
