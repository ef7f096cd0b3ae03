"""Corrections: one line of a profile or a team fact replaced or removed, and a new
preference replacing the old one of the same kind.

`edit_lines(text, old, new)` finds the one line that says `old` (compared as words,
so case and punctuation do not matter) and replaces it with `new`, or removes it when
`new` is None; no match, or several, is a `MemoryRefused` whose text lists what the
file says. Everything else in the file stays byte for byte: a profile edited by hand
keeps its own headings, order and wording.

`preference_kind` says what a preference is about, so "I prefer English" replaces "I
prefer German": a known vocabulary (languages, length, format, tone, units, time of
day, clock), else the sentence's frame without its last word when that frame is
specific enough ("I prefer answers in ..."). None: nothing replaces it.
"""

from __future__ import annotations

import re

from agents.memory.capture import normalised
from agents.memory.files import MemoryRefused

_KINDS: dict[str, frozenset[str]] = {
    "language": frozenset(
        "english german french spanish italian dutch portuguese japanese chinese korean "
        "russian polish swedish danish norwegian finnish turkish greek czech hindi arabic "
        "hebrew ukrainian deutsch".split()
    ),
    "length": frozenset("short shorter brief concise long longer detailed terse verbose".split()),
    "format": frozenset("bullet bullets tables table markdown prose lists paragraphs".split()),
    "tone": frozenset("formal informal casual".split()),
    "units": frozenset("metric imperial celsius fahrenheit".split()),
    "daytime": frozenset("morning mornings afternoon afternoons evening evenings".split()),
    "clock": frozenset("24h 12h".split()),
}
_DATE_SUFFIX = re.compile(r"\s*\((?:\d{4}-\d{2}-\d{2})[^)]*\)\s*$")
_FRAME_WORDS = 3
LISTED_MAX = 30


def bare(line: str) -> str:
    """A profile line without its bullet and its `(date...)` suffix."""
    return _DATE_SUFFIX.sub("", line.strip().removeprefix("-").removeprefix("*").strip())


def preference_kind(text: str) -> str | None:
    words = normalised(bare(text)).split()
    for kind, vocabulary in _KINDS.items():
        if any(word in vocabulary for word in words):
            return kind
    frame = words[:-1]
    return "frame:" + " ".join(frame) if len(frame) >= _FRAME_WORDS else None


def same_kind_lines(lines: list[str], section: str, text: str) -> list[int]:
    """Indexes of the bullet lines under `## section` about what `text` is about."""
    kind = preference_kind(text)
    if kind is None:
        return []
    found, inside = [], False
    for at, line in enumerate(lines):
        if line.startswith("#"):
            inside = line.strip() == f"## {section}"
        elif inside and line.lstrip().startswith(("-", "*")) and preference_kind(line) == kind:
            found.append(at)
    return found


def edit_lines(text: str, old: str, new: str | None, where: str) -> str:
    """`text` with the one line saying `old` replaced by `new` (None: removed)."""
    lines = text.splitlines()
    needle = normalised(old)
    if not needle:
        raise MemoryRefused("`old` is empty; quote a few words of the line to change")
    hits = [at for at, line in enumerate(lines) if needle in normalised(line)]
    if len(hits) != 1:
        raise MemoryRefused(_why(lines, old, where, len(hits)))
    at = hits[0]
    if new is None:
        del lines[at]
    else:
        lines[at] = _like(lines[at], new)
    return "\n".join(lines) + ("\n" if text.endswith("\n") or not text else "")


def _like(line: str, new: str) -> str:
    """`new` in the shape of the line it replaces (its indent and bullet)."""
    indent = line[: len(line) - len(line.lstrip())]
    bullet = line.lstrip()[:2] if line.lstrip().startswith(("- ", "* ")) else ""
    return f"{indent}{bullet}{new.strip()}"


def _why(lines: list[str], old: str, where: str, hits: int) -> str:
    said = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")][:LISTED_MAX]
    listing = "\n".join(f"  {ln}" for ln in said) or "  (nothing yet)"
    if hits == 0:
        return f"no line of {where} says {old[:80]!r}. It says:\n{listing}"
    return f"{hits} lines of {where} say {old[:80]!r}; quote more of the one you mean:\n{listing}"
