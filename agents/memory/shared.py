"""What every agent shares: people's profiles, team knowledge and the decisions log,
plus the index over them and over every agent's archived conversations.

Layout below `<data_dir>`: `people/<person>.md` (one profile per person, written by
auto-capture and `note_about_person`), `team/knowledge/<topic>.md` (`learn_fact(...,
shared=true)`, a worker's `learned` findings, captured facts and consolidation; a newer
note on the same subject replaces the older one, agents/memory/notes.py),
`team/history/<topic>.md` (every write to a topic: who, when, what it replaced),
`team/decisions/YYYY-MM-DD.md` (a dated decisions log, append-only), and
`team/.search.sqlite` (the derived index, which also covers `agents/*/archive/*.jsonl`).
Writes go through `AgentFiles` (locks, atomic rewrites, size caps), rooted at the data
dir, so nothing leaves it.

A profile someone broke by hand (bytes that are not UTF-8) is never rewritten: new
notes are appended to it, so nothing in it is lost.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from agents.memory.capture import normalised
from agents.memory.corrections import edit_lines, same_kind_lines
from agents.memory.durable import SYNCER
from agents.memory.embedding import Embedder
from agents.memory.files import AgentFiles, MemoryRefused, Seen, _atomic_write, topic_name
from agents.memory.notes import HISTORY_DIR, history_entry, revise, subject_of
from agents.memory.search import MemoryIndex
from bot.inbox.people import profile_key

PEOPLE_DIR = "people"
TEAM_KNOWLEDGE = "team/knowledge"
DECISIONS_DIR = "team/decisions"
SHARED_INDEX = "team/.search.sqlite"
DEDUPE_DAYS = 60  # decisions are deduplicated against this many days of the log


class SharedFiles(AgentFiles):
    """`AgentFiles` rooted at the data dir; its scan covers the shared folders and the
    agents' archived conversations."""

    def __init__(self, data_dir: Path, max_bytes: int, timezone: str) -> None:
        super().__init__(
            data_dir, max_bytes, timezone, folders=(PEOPLE_DIR, TEAM_KNOWLEDGE, DECISIONS_DIR)
        )

    def scan(self) -> list[Seen]:
        found: list[Seen] = []
        for folder in (PEOPLE_DIR, TEAM_KNOWLEDGE, DECISIONS_DIR):
            self._walk(str(self.root / folder), found)
        for archive in self.archives():
            self._walk(str(archive), found, ".jsonl")
        return found

    def archives(self) -> list[Path]:
        agents = self.root / "agents"
        try:
            names = sorted(os.listdir(agents))
        except FileNotFoundError:
            return []
        return [agents / n / "archive" for n in names if (agents / n / "archive").is_dir()]

    def memory_files(self) -> list[Path]:
        """The markdown files (archives are too long to return whole)."""
        return [Path(s.path) for s in self.scan() if s.relative.endswith(".md")]


class Shared:
    def __init__(
        self,
        data_dir: Path,
        max_bytes: int,
        timezone: str,
        rescan: float,
        embedder: Embedder | None = None,
    ) -> None:
        self.files = SharedFiles(data_dir, max_bytes, timezone)
        self.index = MemoryIndex(self.files, rescan, SHARED_INDEX, embedder)

    # -- people --------------------------------------------------------------------------
    @staticmethod
    def profile_path(person: str) -> str:
        return f"{PEOPLE_DIR}/{profile_key(person)}.md"

    def profile(self, person: str | None) -> str:
        return self.files.read(self.profile_path(person)) if person else ""

    def note_person(
        self, person: str, text: str, section: str = "Notes", title: str = ""
    ) -> str | None:
        """Add `- text (date)` under `## section` of the person's profile; None when
        the profile already says it. Returns the file written."""
        relative = self.profile_path(person)
        line = f"- {text.strip()} ({self.files.now().date().isoformat()})"
        with self.files.locked(relative) as path:
            raw = path.read_bytes() if path.exists() else b""
            try:
                current = raw.decode("utf-8")
            except UnicodeDecodeError:  # broken by hand: append, rewrite nothing
                current = None
            if normalised(text) in normalised(raw.decode("utf-8", "replace")):
                return None
            if current is None:
                self._append_locked(relative, path, f"\n{line}\n", raw)
            else:
                content = _put_line(current, title or person, section, line, text)
                self._rewrite_locked(relative, path, content)
        self.index.touched(self.files.root / relative)
        return relative

    def _append_locked(self, relative: str, path: Path, text: str, raw: bytes) -> None:
        data = text.encode()
        self.files._check_size(relative, len(raw) + len(data))
        with path.open("ab") as handle:
            handle.write(data)
        SYNCER.later(path)  # fsynced a moment later, off the caller's thread

    def _rewrite_locked(self, relative: str, path: Path, content: str) -> None:
        self.files._check_size(relative, len(content.encode()))
        _atomic_write(path, content)

    def correct(self, relative: str, old: str, new: str | None, where: str) -> str:
        """Replace (or, `new` None, remove) the one line of a shared file saying `old`."""
        with self.files.locked(relative) as path:
            if not path.is_file():
                raise MemoryRefused(f"there is no {where} yet ({relative})")
            try:
                current = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                raise MemoryRefused(
                    f"{relative} is not UTF-8 text (edited by hand?); it is left as it is"
                ) from None
            self._rewrite_locked(relative, path, edit_lines(current, old, new, where))
        self.index.touched(self.files.root / relative)
        return relative

    def people(self) -> list[str]:
        folder = self.files.root / PEOPLE_DIR
        return sorted(p.stem for p in folder.glob("*.md"))

    # -- team knowledge ------------------------------------------------------------------
    def learn(self, topic: str, content: str, source: str = "") -> str:
        """Replace a topic whole (`learn_fact(shared=true)`); the version it replaces and
        who wrote the new one go to the topic's history."""
        name = topic_name(topic)
        relative = f"{TEAM_KNOWLEDGE}/{name}.md"
        with self.files.locked(relative) as path:
            before = path.read_text("utf-8", "replace") if path.exists() else ""
            self._rewrite_locked(relative, path, content.strip() + "\n")
            if before.strip() != content.strip():
                self._history(name, source, content, before)
        self.index.touched(path)
        return relative

    def add_note(self, topic: str, note: str, source: str) -> str | None:
        """A note in a topic, in place of an older note on the same subject (which goes to
        the history); None when the topic says it already. A topic someone broke by hand
        (not UTF-8) only gets the note appended, so nothing in it is lost."""
        name = topic_name(topic)
        relative = f"{TEAM_KNOWLEDGE}/{name}.md"
        line = f"- {note.strip()} ({self.files.now().date().isoformat()}, {source})"
        with self.files.locked(relative) as path:
            raw = path.read_bytes() if path.exists() else b""
            if normalised(note) in normalised(raw.decode("utf-8", "replace")):
                return None
            try:
                current = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._append_locked(relative, path, f"\n{line}\n", raw)
                replaced: list[str] = []
            else:
                content, replaced = revise(current, name, line, subject_of(note))
                self._rewrite_locked(relative, path, content)
            self._history(name, source, line, replaced)
        self.index.touched(path)
        return relative

    def _history(self, topic: str, source: str, written: str, replaced: list[str] | str) -> None:
        """Keep what a write replaced (called holding the topic's lock: entries are in the
        order of the writes). A history that reached the size cap goes on in a new part."""
        now = self.files.now()
        entry = history_entry(f"{now:%Y-%m-%d %H:%M:%S}", source, written, replaced)
        relative = f"{HISTORY_DIR}/{topic}.md"
        try:
            self.files.append(relative, entry, f"# History of {topic}\n")
        except MemoryRefused:
            self.files.append(f"{HISTORY_DIR}/{topic}-{now:%Y%m%dT%H%M%S}.md", entry)

    def history(self, topic: str) -> str:
        return self.files.read(f"{HISTORY_DIR}/{topic_name(topic)}.md")

    def topics(self) -> list[str]:
        return sorted(
            f"{TEAM_KNOWLEDGE}/{p.name}" for p in (self.files.root / TEAM_KNOWLEDGE).glob("*.md")
        )

    # -- decisions -----------------------------------------------------------------------
    def recent_decisions(self, days: int = DEDUPE_DAYS) -> list[str]:
        today = self.files.now().date()
        names = [f"{DECISIONS_DIR}/{today - timedelta(days=n)}.md" for n in range(days)]
        return [self.files.read(n) for n in names if (self.files.root / n).is_file()]

    def add_decision(self, text: str, source: str, known: list[str] | None = None) -> str | None:
        """Append to today's decisions log unless a recent entry already says it."""
        needle = normalised(text)
        if not needle:
            return None
        logs = self.recent_decisions() if known is None else known
        if any(needle in normalised(log) for log in logs):
            return None
        now = self.files.now()
        relative = f"{DECISIONS_DIR}/{now.date().isoformat()}.md"
        head = f"# Decisions {now.date().isoformat()}\n"
        entry = f"\n- {now:%H:%M} {text.strip()} ({source})\n"
        path = self.files.append(relative, entry, head)
        self.index.touched(path)
        if known is not None:
            known.append(entry)
        return relative

    def close(self) -> None:
        self.index.close()

    # -- migration -----------------------------------------------------------------------
    def migrate_profiles(self, person_of: Callable[[str], str]) -> int:
        """Once: merge the per-agent profiles of earlier versions
        (`agents/<id>/users/<id>.md`) into `people/<person>.md`, then rename each
        `users` folder to `users.migrated` (kept, never read again). Lines the shared
        profile already holds are not added twice, so a crash midway is harmless."""
        moved = 0
        for users in sorted((self.files.root / "agents").glob("*/users")):
            if not users.is_dir():
                continue
            for old in sorted(users.glob("*.md")):
                self._merge_profile(person_of(old.stem), old.read_text("utf-8", "replace"))
                moved += 1
            users.rename(users.with_name("users.migrated"))
        return moved

    def _merge_profile(self, person: str, text: str) -> None:
        relative = self.profile_path(person)
        with self.files.locked(relative) as path:
            current = path.read_text("utf-8", "replace") if path.exists() else ""
            have = {normalised(line) for line in current.splitlines()}
            new = [ln for ln in text.splitlines() if ln.strip() and normalised(ln) not in have]
            if not current.strip():
                content = text.rstrip("\n") + "\n"
            elif new:
                content = current.rstrip("\n") + "\n\n" + "\n".join(new) + "\n"
            else:
                return
            _atomic_write(path, content)
        self.index.touched(self.files.root / relative)


def _put_line(current: str, person: str, section: str, line: str, text: str) -> str:
    """`line` in `## section`, replacing the lines about the same thing (a preference
    of the same kind: the newest one holds)."""
    if section != "Preferences":
        return _add_line(current, person, section, line)
    lines = current.splitlines()
    same = same_kind_lines(lines, section, text)
    if not same:
        return _add_line(current, person, section, line)
    lines[same[0]] = line
    for at in reversed(same[1:]):
        del lines[at]
    return "\n".join(lines) + "\n"


def _add_line(current: str, person: str, section: str, line: str) -> str:
    """`line` appended at the end of `## section` (made when missing)."""
    lines = current.splitlines()
    if not current.strip():
        return f"# {person}\n\n## {section}\n{line}\n"
    heading = f"## {section}"
    if heading not in lines:
        return current.rstrip("\n") + f"\n\n{heading}\n{line}\n"
    at = lines.index(heading) + 1
    while at < len(lines) and not lines[at].startswith("#"):
        at += 1
    while at > 0 and not lines[at - 1].strip():
        at -= 1
    lines.insert(at, line)
    return "\n".join(lines) + "\n"


__all__ = ["MemoryRefused", "Shared"]
