"""How a memory file becomes sections (`split_sections`, `sections_of`), and a file too
big to index within one query's budget (agents/memory/search.py):
read, hashed and cut into sections once, then written a slice at a time by a
background thread, with searches between. Each slice carries on from where the last
stopped; the file is read again only when it changed meanwhile (its size or mtime).

A failure of that background work is logged once per file; the next search carries
on with it (and meets the same failure in the foreground, where the caller sees it).
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from agents.memory.files import Seen
from agents.memory.transcripts import transcript_sections
from bot.core.bounded import Bounded

log = logging.getLogger(__name__)

_HEADER = re.compile(r"^#{2,3} ")

#: files whose background failure was logged (past it, the oldest are forgotten: such
#: a file may be logged once more)
REPORTED_MAX = 1_000


@dataclass(slots=True)
class Part:
    """A file as read once: its hash, its sections (cut when first written) and how
    many are in the index."""

    stat: tuple[int, int]  # (mtime_ns, size) when it was read
    digest: str
    text: str = ""  # until it is cut into sections
    sections: list[str] | None = None
    done: int = 0

    def cut(self, relative: str, most: int) -> list[str]:
        """Its sections (the first `most`), cut from its text once."""
        if self.sections is None:
            self.sections, self.text = sections_of(relative, self.text)[:most], ""
        return self.sections


@dataclass(slots=True)
class Parts:
    """The files partly indexed. Bound: one entry per file too big for one slice,
    holding its sections (its text, once) until it is finished."""

    held: dict[str, Part] = field(default_factory=dict)
    #: the file being read or written now (what a failure names)
    current: str = ""
    _reported: Bounded[str, None] = field(default_factory=lambda: Bounded(REPORTED_MAX))

    def take(self, seen: Seen) -> Part | None:
        """The file to write: the part held since it was read when the file is as it
        was, else the file read afresh (carrying on where a part of the same content
        stopped). None: the file is gone."""
        self.current = seen.path
        stat = (seen.mtime_ns, seen.size)
        held = self.held.get(seen.relative)
        if held is not None and held.stat == stat:
            return held
        try:
            text = Path(seen.path).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:  # removed since the walk: the next scan forgets it
            self.held.pop(seen.relative, None)
            return None
        digest = hashlib.sha1(text.encode()).hexdigest()
        if held is not None and held.digest == digest:
            held.stat = stat  # touched, not changed
            return held
        self.held.pop(seen.relative, None)
        return Part(stat, digest, text)

    def keep(self, relative: str, part: Part) -> bool:
        """Hold a part not finished for the next slice (True), or let a finished one go."""
        if part.sections is not None and part.done < len(part.sections):
            self.held[relative] = part
            return True
        self.held.pop(relative, None)
        self._reported.pop(self.current, None)
        return False

    def failed(self, exc: Exception) -> None:
        """The background work failed: said once per file."""
        if self.current in self._reported:
            return
        self._reported[self.current] = None  # past REPORTED_MAX the oldest leaves
        log.warning(
            "memory search: indexing %s in the background failed (%s: %s); the next search"
            " carries on with it",
            self.current,
            type(exc).__name__,
            exc,
        )


def split_sections(text: str) -> list[str]:
    """Markdown cut at `## ` / `### ` headings (not inside code fences)."""
    sections: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and _HEADER.match(line) and current:
            sections.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("\n".join(current))
    return [s for s in sections if s.strip()]


def sections_of(relative: str, text: str) -> list[str]:
    """The searchable sections of a file: markdown by heading, an archived
    conversation (`.jsonl`) as its transcript in chunks."""
    if relative.endswith(".jsonl"):
        return transcript_sections(relative, text)
    return split_sections(text)
