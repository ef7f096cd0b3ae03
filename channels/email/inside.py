"""Answers typed inside the quote of the bot's own mail, found by knowing that mail.

Some clients keep what a person types inside a quoted block (Apple Mail, an HTML
blockquote the person did not break out of): in the text it is a quoted line like the
question around it, and `strip_reply` alone would cut it. When a reply quotes a worker's
question mail of ours, every quoted line that is not words of ours is the person's: `answers_inside`
gives those lines back, each under the lines of ours it follows (inline.py's context).
Quote headers, header blocks and deeper quotes (older history) are never an answer.
Pure functions of text.
"""

from __future__ import annotations

import re

from channels.email import reply_patterns as pat
from channels.email.inline import Segment, is_quote, render
from channels.email.reply import LONG_LINE, find_cut

_ONE_LEVEL = re.compile(r"^\s*[>|][ \t]?")
_WORD = re.compile(r"\w+")
#: an HTML converter's link: "[bot@example.org](mailto:bot@example.org)"
_LINK = re.compile(r"\[([^\]]{0,200})\]\([^)\s]{0,400}\)")


def answers_inside(body: str, own: str) -> list[str]:
    """The lines a person typed inside the quote of `own` (our mail's text), with the
    lines of ours each one follows as context; [] when there are none."""
    # a link of ours, quoted as its text and address or (converted HTML) as its text
    ours = (f" {_words(own, links=False)} ", f" {_words(own)} ")
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut = find_cut(lines)
    if cut is None or ours[0].isspace():
        return []
    segments = [Segment()]
    for line in lines[cut.index :]:
        inner = _ONE_LEVEL.sub("", line, count=1)
        if not is_quote(line, pipes=True) or is_quote(inner, pipes=True) or _heading(inner):
            continue  # outside the quote (strip_reply's), older history, or a header
        words = _words(inner, links=False)
        if not words:  # a blank quoted line: it parts the paragraphs of ours
            if not segments[-1].answer:
                segments[-1].quote.append(line)
            continue
        if f" {words} " in ours[0] or f" {_words(inner)} " in ours[1]:
            if segments[-1].answer:
                segments.append(Segment())
            segments[-1].quote.append(line)
        else:
            segments[-1].answer.append(inner.strip())
    said = [s for s in segments if s.answer]
    return render(said) if said else []


def _words(text: str, links: bool = True) -> str:
    """The words of `text`, lower-cased; with `links`, a converted link's text alone."""
    return " ".join(_WORD.findall((_LINK.sub(r"\1", text) if links else text).lower()))


def _heading(line: str) -> bool:
    """A quote header or a header-block line, which the client wrote, not the person."""
    s = line.strip().strip("*")
    if not s or len(s) > LONG_LINE:
        return False
    return bool(
        pat.WROTE.match(s)
        or pat.DATED_ADDRESS.match(s)
        or pat.FROM_LINE.match(s)
        or pat.BLOCK_LINE.match(s)
        or pat.SEPARATOR.match(s)
    )
