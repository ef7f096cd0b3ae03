"""One agent's memory directory: safe paths, atomic writes, appends, size caps, locks.

Everything the memory tools write goes through `AgentFiles`, so an agent reads and
writes only below its own directory. Names that come from the model (topics) or from
a platform (person ids) are checked and sanitised here; a path that would leave the
directory — `../`, an absolute path, a symlink pointing out — is refused with a
`MemoryRefused` whose text goes back to the model.

Writes are either appends (daily logs: written at once, fsynced a moment later from a
thread of their own, durable.py) or whole-file rewrites (temp file, fsync, rename, so a
reader sees the old or the new file, never half of one).
A per-file lock (a thread lock plus `flock` on a lock file, so two processes sharing
a data dir are covered too) serialises read-modify-write cycles.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from agents.errors import AgentError
from agents.memory.durable import SYNCER
from agents.model.blocks import THINKING, Blocks, Message, Messages

MEMORY_FILE = "MEMORY.md"
INDEX_FILE = "memory/index.md"
LOG_DIR = "memory"
KNOWLEDGE_DIR = "memory/knowledge"
USERS_DIR = "users"
ARCHIVE_DIR = "archive"
EARLIER_DIR = "memory/earlier"  # a full daily log, moved aside when it reached the cap
_LOCK_DIR = ".locks"

_TOPIC_MAX = 64
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
_ENTRY = re.compile(r"^### (.+)$")
#: one lock per memory file being written, by its lock file's path; bounded: a lock leaves
#: once no thread holds or waits for it (weak values), not one per file ever written
_locks: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


@dataclass(frozen=True, slots=True)
class Seen:
    """A memory file as one directory walk saw it."""

    relative: str
    path: str
    mtime_ns: int
    size: int


class MemoryRefused(AgentError):
    """A memory request that cannot be served; the text says what to do instead."""


def topic_name(raw: str) -> str:
    """`learn_fact`'s topic as a file stem: lower-case letters, digits and dashes.

    Spaces and underscores become dashes ("Python Asyncio" -> "python-asyncio"); a
    topic that looks like a path is refused rather than silently rewritten, so the
    model learns it cannot reach other files.
    """
    text = raw.strip()
    if "/" in text or "\\" in text or ".." in text or text.startswith("~"):
        raise MemoryRefused(
            f"topic {raw[:80]!r} looks like a path; a topic is a short name of letters, "
            "digits and dashes (like python-asyncio), stored in memory/knowledge/<topic>.md"
        )
    slug = re.sub(r"[\s_.]+", "-", text.lower())
    slug = re.sub(r"[^a-z0-9-]", "", slug)
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    if not slug:
        raise MemoryRefused(
            f"topic {raw[:80]!r} has no letters or digits; use a short name like python-asyncio"
        )
    if len(slug) > _TOPIC_MAX:
        raise MemoryRefused(f"topic is {len(slug)} characters long; keep it under {_TOPIC_MAX}")
    return slug


def person_name(raw: str) -> str | None:
    """A person id (Slack U123, an email address, a login) as a profile file stem."""
    slug = re.sub(r"[^a-z0-9@._+-]", "-", raw.strip().lower()).lstrip(".")[:120]
    return slug or None


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


_PATHS_MAX = 512


class AgentFiles:
    """The files of one agent below `<data_dir>/agents/<agent_id>/`."""

    def __init__(
        self,
        root: Path,
        max_bytes: int,
        timezone: str = "UTC",
        folders: tuple[str, ...] = (KNOWLEDGE_DIR,),
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.zone = ZoneInfo(timezone)
        for folder in folders:
            (root / folder).mkdir(parents=True, exist_ok=True)
        self._real_root = root.resolve()
        self._real_prefix = str(self._real_root) + os.sep
        self._prefix = str(root) + os.sep
        #: each relative name checked for its form once: (its path, as a string); bounded
        #: (emptied past _PATHS_MAX names: logs, topics, profiles an agent has read)
        self._paths: dict[str, tuple[Path, str]] = {}

    # -- paths -------------------------------------------------------------------------
    def path(self, relative: str) -> Path:
        """`relative` below the root, refusing anything that resolves outside it (its
        symlinks followed at every call: one may be made any time; a turn reads several
        files, so this is on the turn's path: strings, not pathlib, after the first call)."""
        held = self._paths.get(relative)
        if held is None:
            rel = Path(relative)
            if rel.is_absolute() or ".." in rel.parts:
                raise MemoryRefused(
                    f"{relative!r} is outside this agent's memory; use a plain name"
                )
            if len(self._paths) >= _PATHS_MAX:
                self._paths.clear()
            held = self._paths[relative] = (self.root / rel, str(self.root / rel))
        real = os.path.realpath(held[1])
        if not (real + os.sep).startswith(self._real_prefix):
            raise MemoryRefused(f"{relative!r} leads outside this agent's memory (a symlink?)")
        return held[0]

    def now(self) -> datetime:
        return datetime.now(self.zone)

    def day_path(self, day: date) -> str:
        return f"{LOG_DIR}/{day.isoformat()}.md"

    def recent_days(self, days: int) -> list[str]:
        """Relative paths of the last `days` daily logs that exist, oldest first."""
        today = self.now().date()
        names = [self.day_path(today - timedelta(days=n)) for n in range(days - 1, -1, -1)]
        return [n for n in names if (self.root / n).is_file()]

    def daily_logs(self) -> list[str]:
        """Every daily log, oldest first."""
        folder = self.root / LOG_DIR
        return sorted(f"{LOG_DIR}/{p.name}" for p in folder.iterdir() if _DAY.match(p.name))

    def topics(self) -> list[str]:
        """Relative paths of the knowledge files, sorted."""
        return sorted(f"{KNOWLEDGE_DIR}/{p.name}" for p in (self.root / KNOWLEDGE_DIR).glob("*.md"))

    def memory_files(self) -> list[Path]:
        """Every markdown file that is memory: MEMORY.md, memory/** (not SOUL.md, not
        the archive; profiles are shared, in <data_dir>/people); symlinks that lead
        outside are skipped."""
        return [Path(seen.path) for seen in self.scan()]

    def scan(self) -> list[Seen]:
        """`memory_files` with each file's stat, from one directory walk (the index's
        rescan runs this over the whole memory, so it avoids per-file overhead)."""
        memory = self.seen(self.root / MEMORY_FILE)
        found = [memory] if memory is not None and self._inside(Path(memory.path)) else []
        self._walk(str(self.root / LOG_DIR), found)
        return found

    def seen(self, path: Path) -> Seen | None:
        """One file's `Seen`, or None when it is gone."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        return Seen(self.relative(path), str(path), stat.st_mtime_ns, stat.st_size)

    def _walk(self, folder: str, found: list[Seen], suffix: str = ".md") -> None:
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                self._walk(entry.path, found, suffix)
            elif entry.name.endswith(suffix) and entry.is_file():
                if entry.is_symlink() and not self._inside(Path(entry.path)):
                    continue
                stat = entry.stat()
                relative = entry.path[len(self._prefix) :]
                found.append(Seen(relative, entry.path, stat.st_mtime_ns, stat.st_size))

    def _inside(self, path: Path) -> bool:
        return path.resolve().is_relative_to(self._real_root)

    def relative(self, path: Path) -> str:
        return str(path)[len(self._prefix) :]

    # -- reading -----------------------------------------------------------------------
    def read(self, relative: str) -> str:
        path = self.path(relative)
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    # -- writing -----------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self, relative: str) -> Iterator[Path]:
        """Hold the file's lock (in this process and across processes) while writing."""
        path = self.path(relative)
        lock_dir = self.root / _LOCK_DIR
        lock_dir.mkdir(parents=True, exist_ok=True)  # the folder may have been retired
        key = hashlib.sha1(relative.encode()).hexdigest()[:16]
        with _lock_for(str(lock_dir / key)), (lock_dir / key).open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def write(self, relative: str, content: str) -> Path:
        """Replace the file atomically (temp file in the same folder + rename)."""
        self._check_size(relative, len(content.encode()))
        with self.locked(relative) as path:
            _atomic_write(path, content)
        return path

    def append(self, relative: str, content: str, header: str = "") -> Path:
        """Append (append-only daily logs), in the file when this returns, fsynced a
        moment later (durable.py); `header` starts the file when this append creates it."""
        with self.locked(relative) as path:
            self._append_locked(path, relative, content, header)
        return path

    def _append_locked(self, path: Path, relative: str, content: str, header: str) -> None:
        size = path.stat().st_size if path.exists() else 0
        data = ((header if size == 0 else "") + content).encode()
        self._check_size(relative, size + len(data))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        SYNCER.later(path)

    def append_entry(self, text: str, label: str = "") -> str:
        """A timestamped section appended to today's log; returns its relative path.
        A log this entry would take over the cap is folded first, under the same lock
        (`_fold_day`)."""
        now = self.now()
        relative = self.day_path(now.date())
        title = now.strftime("%H:%M:%S") + (f" · {label}" if label else "")
        entry, header = f"\n### {title}\n{text.strip()}\n", f"# {now.date().isoformat()}\n"
        self._check_size(relative, len(header.encode()) + len(entry.encode()))
        with self.locked(relative) as path:
            if path.exists() and path.stat().st_size + len(entry.encode()) > self.max_bytes:
                self._fold_day(path, header)
            self._append_locked(path, relative, entry, header)
        return relative

    def _fold_day(self, path: Path, header: str) -> str:
        """A daily log at its cap is summarised, not cut: its whole text moves to
        memory/earlier/<day>.<n>.md (still memory: searched, never pruned) and the log
        starts again with an outline of what it held, one line per entry, and where the
        full text is. The caller holds the log's lock. Returns the moved file's path."""
        full = path.read_text(encoding="utf-8", errors="replace")
        moved = self._earlier_name(path.stem)
        _atomic_write(self.root / moved, full)
        outline = _outline(full, self.max_bytes // 4)
        _atomic_write(path, f"{header}\n## Earlier today (full text: {moved})\n{outline}")
        return moved

    def _earlier_name(self, day: str) -> str:
        n = 1
        while (self.root / f"{EARLIER_DIR}/{day}.{n}.md").exists():
            n += 1
        return f"{EARLIER_DIR}/{day}.{n}.md"

    def archive(self, key: str, messages: Messages) -> str:
        """A conversation as JSON lines under archive/ (never capped, never deleted), its
        thinking left out: that is for the API's eyes only, never an export."""
        slug = archive_slug(key)
        stamp = self.now().strftime("%Y%m%dT%H%M%S%f")
        relative = f"{ARCHIVE_DIR}/{slug}-{stamp}.jsonl"
        lines = "".join(json.dumps(_unthought(m)) + "\n" for m in messages)
        _atomic_write(self.path(relative), lines)
        return relative

    def _check_size(self, relative: str, size: int) -> None:
        if size > self.max_bytes:
            raise MemoryRefused(
                f"{relative} would grow to {size:,} bytes, over the cap of "
                f"{self.max_bytes:,} (SWITCHBOARD_MEMORY_FILE_MAX_BYTES); keep it shorter, "
                "or move detail into knowledge topics with learn_fact"
            )


def _outline(text: str, budget: int) -> str:
    """One line per `### ` entry — its title and the start of its first line — the
    newest kept when they do not all fit in `budget` bytes."""
    lines: list[str] = []
    rows = text.split("\n")
    for i, row in enumerate(rows):
        found = _ENTRY.match(row)
        if row.startswith("## Earlier today"):
            lines.append(f"- {row[3:]}")  # an earlier fold's pointer, carried forward
        elif found:
            first = next((r.strip() for r in rows[i + 1 :] if r.strip()), "")
            lines.append(f"- {found.group(1)}: {first[:120]}")
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line.encode()) + 1
        if size > budget:
            break
        kept.append(line)
    dropped = len(lines) - len(kept)
    head = [f"- ({dropped} earlier entries: see the full text)"] if dropped else []
    return "\n".join(head + kept[::-1]) + "\n"


def _unthought(message: Message) -> Message:
    content = message["content"]
    if not isinstance(content, list):
        return message
    kept: Blocks = [b for b in content if b["type"] not in THINKING]
    return {**message, "content": kept}


def _atomic_write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def archive_slug(key: str) -> str:
    """The file-name stem a conversation's archives start with (`<slug>-<stamp>.jsonl`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:60] or "conversation"
