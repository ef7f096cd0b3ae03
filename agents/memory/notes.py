"""Team notes revised, not only appended (reference 002: the memory agent "writes
new/updated documents").

A team-knowledge note is a bullet line `- <note> (<date>, <source>)`. A new note whose
subject is that of an older line ("The API URL is X" after "The API URL is Y": the
words before `is` / `are` / `=` / `:`) replaces that line in place; a note with no such
subject is appended. What is replaced is never lost: every write to a topic is also a
dated entry in `team/history/<topic>.md` (who wrote what, what it replaced), which no
prompt and no search reads, so a stale value never answers a question, but a person can
read how a fact changed.

Writers hold the topic file's lock for the whole read-revise-write, so two agents
writing the same fact at once never interleave: the later write wins and the earlier
one is in the history.
"""

from __future__ import annotations

import re

from agents.memory.capture import normalised
from agents.memory.corrections import bare

HISTORY_DIR = "team/history"
_COPULA = re.compile(r"\s(?:is|are|was|were|runs on|lives at|moved to)\s|\s?[=:]\s", re.IGNORECASE)
_ARTICLES = ("the", "our", "a", "an", "your", "their", "my")
_SUBJECT_WORDS = 6


def subject_of(note: str) -> str | None:
    """What a note is about: the words before its first `is` (`are`, `=`, `:` ...),
    without an article, at most six words; None when it has no such frame."""
    found = _COPULA.search(" " + bare(note) + " ")
    if found is None:
        return None
    words = normalised(bare(note)[: max(0, found.start() - 1)]).split()
    while words and words[0] in _ARTICLES:
        words = words[1:]
    return " ".join(words) if 0 < len(words) <= _SUBJECT_WORDS else None


def revise(current: str, title: str, line: str, subject: str | None) -> tuple[str, list[str]]:
    """`current` with `line` in it: in place of the bullet lines about `subject`, else
    appended (the file made with `# title` when empty). Returns the new text and the
    lines it replaced."""
    lines = current.splitlines()
    same = [
        at
        for at, old in enumerate(lines)
        if subject and old.lstrip().startswith(("- ", "* ")) and subject_of(old) == subject
    ]
    if not same:
        if not current.strip():
            return f"# {title}\n\n{line}\n", []
        return current.rstrip("\n") + f"\n{line}\n", []
    replaced = [lines[at].strip() for at in same]
    lines[same[0]] = line
    for at in reversed(same[1:]):
        del lines[at]
    return "\n".join(lines) + "\n", replaced


def history_entry(stamp: str, source: str, written: str, replaced: list[str] | str) -> str:
    """One dated history entry: what was written, by whom, and what it replaced."""
    head = f"\n### {stamp} · {source or 'written'}\n"
    if isinstance(replaced, str):  # a whole topic rewritten (learn_fact)
        before = f"\nReplaced this version:\n\n{replaced.strip()}\n" if replaced.strip() else ""
        return f"{head}{written.strip()}\n{before}"
    was = "".join(f"- replaced: {old.removeprefix('- ').removeprefix('* ')}\n" for old in replaced)
    return f"{head}{written.strip()}\n{was}"
