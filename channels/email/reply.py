"""The new part of a reply: quoted history and signatures stripped from a mail's text.

`strip_reply` is the one entry point; parse.py calls it on the body it chose. The
quote headers and signatures it knows come from mail-parser-reply. Pure functions of
text, no I/O.
"""

from __future__ import annotations

import re

from mailparser_reply.parser import EmailMessage as ReplyText

_SHELF = re.compile(r"\x01(\d+)\x01")
LONG_LINE = 200
#: languages whose "On ... wrote:" headers and signatures mail-parser-reply knows
REPLY_LANGUAGES = ("en", "de", "fr", "es", "it", "nl")


def strip_reply(text: str) -> str:
    """The new part of a reply: no quoted history, no signature; the whole text when
    stripping leaves nothing (a mail that is all quote says nothing new)."""
    text = text.replace("\r\n", "\n").replace("\x00", "").replace("\x01", "")
    shelved, short = _shelve_long_lines(text)
    try:
        parsed = ReplyText(text=short, languages=list(REPLY_LANGUAGES), keep_hyphen_lists=True)
        replies = parsed.read().replies
        latest = replies[0].body if replies else short
    except Exception:
        latest = short
    latest = _SHELF.sub(lambda m: shelved[int(m.group(1))], _drop_quoted_tail(latest))
    return latest.strip() or text.strip()


def _shelve_long_lines(text: str) -> tuple[list[str], str]:
    """Swap lines too long to be a "wrote:" header or a signature for short tokens.

    The reply parser's header patterns backtrack badly on very long lines (seconds on
    one 10 KB line); no real quote header is that long, so it never sees them.
    """
    shelved: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > LONG_LINE:
            lines[i] = f"\x01{len(shelved)}\x01"
            shelved.append(line.strip())
    return shelved, "\n".join(lines)


def _drop_quoted_tail(text: str) -> str:
    """Drop a trailing block of `>` lines (a quote with no "wrote:" line above it)."""
    lines = text.rstrip().split("\n")
    while lines and (lines[-1].lstrip().startswith(">") or not lines[-1].strip()):
        lines.pop()
    return "\n".join(lines)
