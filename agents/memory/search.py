"""`memory_search`: the whole memory when it is small, else BM25 over markdown sections
and, in hybrid mode, their meaning (agents/memory/vectors.py, fused in hybrid.py).

The markdown files are the source of truth. The SQLite FTS5 index beside them
(`<agent dir>/.search.sqlite`) is derived: each file's `##`/`###` sections are rows,
ranked with FTS5's built-in bm25. Before a query the index is brought up to date by
modification time and size (a changed file is re-read, and re-indexed only when its
hash changed), so files edited by hand are found; deleting the index file simply
rebuilds it on the next search. The same file holds each section's embedding (a blob keyed
by section hash: never embedded twice). `plain_scan` is the design's reference (grep).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agents.memory.embedding import EMBED_CHARS, QUERY_SECONDS, Embedder
from agents.memory.files import AgentFiles, Seen
from agents.memory.parts import Parts, split_sections

INDEX_FILE = ".search.sqlite"
_SECTION_BITS = 20  # rowid = file id << 20 | section number
_WORD = re.compile(r"\w+", re.UNICODE)

MMAP_BYTES = 1 << 30  # address space, not memory: pages come from the OS's file cache
SLICE_SECONDS = 0.5  # the background keyword indexer's work between rests
INSERT_BATCH = 2_000  # sections written between looks at the clock
RANK_BUDGET = 1_000  # sections bm25 may rank per query: bounds a query's time
SCHEMA_VERSION = 2  # another version on disk: the derived index is dropped and rebuilt
OPEN_SECONDS = 5.0  # how long opening waits out another process creating the same index
_TABLES = ("files", "sections", "digests", "vectors", "meta")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL, sha1 TEXT NOT NULL, sections INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS sections USING fts5(
    path UNINDEXED, body, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS digests (
    rowid INTEGER PRIMARY KEY, digest BLOB NOT NULL, kind INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS digests_by_digest ON digests(digest);
CREATE TABLE IF NOT EXISTS vectors (digest BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query USING fts5(body, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_terms USING fts5vocab(temp, query, row);
"""
_Row = tuple[int, str, int, int, str]  # id, path, mtime_ns, size, sha1


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    text: str
    score: float = 0.0  # FTS5 bm25 rank: lower is better; 0 when unranked


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    broad: bool  # every query word is in most sections: unranked


class MemoryIndex:
    """The FTS5 index of one agent's memory, refreshed from the files before use."""

    def __init__(
        self,
        files: AgentFiles,
        rescan_seconds: float = 0.0,
        name: str = INDEX_FILE,
        embedder: Embedder | None = None,
    ) -> None:
        from agents.memory.vectors import Vectors

        self.files = files
        self.name = name
        self.rescan_seconds = rescan_seconds
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._scanned_at = 0.0
        self._dirty: set[Path] = set()
        self._total: int | None = None  # bytes indexed, known until something changes
        self.parts = Parts()  # the files partly indexed (agents/memory/parts.py)
        self._draining = threading.Lock()  # held by the one background indexer
        self.changes = 0  # counts syncs that changed sections (and reconnections)
        self.opened = 0  # counts close(): a background embedder stops when it moves
        self.vectors = Vectors(self, embedder) if embedder is not None else None

    @property
    def db_path(self) -> Path:
        return self.files.root / self.name

    def _conn(self) -> sqlite3.Connection:
        if self._db is not None and not self.db_path.exists():  # deleted by hand: rebuild
            self._db.close()
            self._db = None
        if self._db is None:
            self._db = self._open()
            self.changes += 1
            self._scanned_at = float("-inf")
            self._total = None
        return self._db

    def _open(self) -> sqlite3.Connection:
        """The index's connection. Two processes opening a new index at once: the one
        that loses the race for the new file's first lock (`journal_mode=WAL` takes it
        without waiting) tries again, for up to OPEN_SECONDS."""
        deadline = time.monotonic() + OPEN_SECONDS
        while True:
            db = sqlite3.connect(self.db_path, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                # read pages through a memory map: no read() call per page, so ranking a
                # query's doclists costs far less when two indexes take turns (own + shared)
                db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
                self._schema(db)
                return db
            except sqlite3.OperationalError as exc:
                db.close()
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @staticmethod
    def _schema(db: sqlite3.Connection) -> None:
        """The layout checked and made under one write lock: another process doing the
        same at once waits, and then finds it made (before, it could drop the tables the
        first had just created, as the version it had read was still the old one)."""
        begin_writing(db)
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                for table in _TABLES:  # an older layout: derived, so dropped and rebuilt
                    db.execute(f"DROP TABLE IF EXISTS {table}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.commit()
        except BaseException:
            db.rollback()
            raise

    @contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        """The index's connection, held alone (for the vectors' own queries)."""
        with self._lock:
            yield self._conn()

    def close(self) -> None:
        with self._lock:
            self.opened += 1
            if self._db is not None:
                self._db.close()
                self._db = None

    def touched(self, path: Path) -> None:
        """A memory tool wrote `path`: re-index it before the next query, whatever the clock."""
        with self._lock:
            self._dirty.add(path)

    # -- refresh -------------------------------------------------------------------------
    @property
    def indexing(self) -> bool:  # a file is partly indexed: a background thread finishes it
        return bool(self.parts.held)

    def refresh(self, force: bool = False, seconds: float | None = None) -> int:
        """Bring the index up to date with the files; returns how many files changed.

        The stat walk over every file runs at most every `rescan_seconds` (0: before
        every query), which bounds a query's cost on a large memory; files our own
        tools wrote are re-indexed at once in any case. Indexing stops after about
        `seconds` (default: the embedding's budget); a background thread does the rest.
        """
        deadline = time.monotonic() + (QUERY_SECONDS if seconds is None else seconds)
        with self._lock:
            db = self._conn()
            now = time.monotonic()
            due = force or now - self._scanned_at >= self.rescan_seconds
            if not due and not self._dirty:  # nothing to look at: a query pays nothing
                return 0
            # another process may refresh the same file: take the write lock first, so
            # what `files` says is still true when we write (waits up to 5 s for it)
            begin_writing(db)
            try:
                changed = self._refresh(db, now, due, deadline)
            except BaseException:
                db.rollback()
                raise
            db.commit()
            if changed:
                self._total = None
                self.changes += 1
        if self.parts.held and self._draining.acquire(blocking=False):
            threading.Thread(target=self._drain, daemon=True).start()
        return changed

    def _drain(self) -> None:
        """Finish part-indexed files a slice (one lock hold) at a time: searches go between."""
        try:
            while self.parts.held and self._db is not None:
                self.refresh(seconds=SLICE_SECONDS)
                time.sleep(0.01)
        except Exception as exc:  # a thread's failure goes to the log, once per file
            self.parts.failed(exc)
        finally:
            self._draining.release()

    def _refresh(self, db: sqlite3.Connection, now: float, due: bool, deadline: float) -> int:
        rows = db.execute("SELECT id, path, mtime_ns, size, sha1 FROM files")
        known: dict[str, _Row] = {row[1]: row for row in rows}
        if due:
            seen = self.files.scan()
            gone = set(known) - {s.relative for s in seen}
            self._scanned_at = now
        else:
            dirty = {self.files.relative(p): self.files.seen(p) for p in self._dirty}
            seen = [s for s in dirty.values() if s is not None]
            gone = {relative for relative, s in dirty.items() if s is None} & set(known)
        self._dirty.clear()
        changed = sum(self._sync(db, known.get(s.relative), s, deadline) for s in seen)
        for relative in gone:
            self._forget(db, known[relative][0])
        return changed + len(gone)

    def _sync(self, db: sqlite3.Connection, row: _Row | None, seen: Seen, deadline: float) -> bool:
        if row is not None and (row[2], row[3]) == (seen.mtime_ns, seen.size):
            return False
        part = self.parts.take(seen)
        if part is None:
            return False
        if row is not None and row[4] == part.digest and not part.done:  # touched only
            db.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
                (seen.mtime_ns, seen.size, row[0]),
            )
            return False
        if part.done and row is not None and row[4] == part.digest:
            file_id = row[0]  # part-indexed: carry on where it stopped
        else:
            if row is not None:
                self._forget(db, row[0])
            part.done, count = 0, len(part.cut(seen.relative, 1 << _SECTION_BITS))
            file_id = self._new_file(db, seen, part.digest, count)
        sections = part.cut(seen.relative, 1 << _SECTION_BITS)
        part.done = self._insert(
            db, file_id << _SECTION_BITS, seen.relative, sections, part.done, deadline
        )
        if self.parts.keep(seen.relative, part):  # out of time: mtime -1 keeps it "changed"
            self._dirty.add(Path(seen.path))
        mtime = -1 if seen.relative in self.parts.held else seen.mtime_ns
        db.execute("UPDATE files SET mtime_ns = ? WHERE id = ?", (mtime, file_id))
        return True

    @staticmethod
    def _new_file(db: sqlite3.Connection, seen: Seen, digest: str, sections: int) -> int:
        cur = db.execute(
            "INSERT INTO files(path, mtime_ns, size, sha1, sections) VALUES (?, -1, ?, ?, ?)",
            (seen.relative, seen.size, digest, sections),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    @staticmethod
    def _insert(
        db: sqlite3.Connection, base: int, relative: str, sections: list[str], n: int, end: float
    ) -> int:
        """Write sections from `start` in batches until done or past `deadline`."""
        kind = int(relative.endswith(".jsonl"))  # curated notes are embedded first
        start = n
        while n < len(sections) and (n == start or time.monotonic() < end):
            batch = list(enumerate(sections[n : n + INSERT_BATCH], start=base + n))
            db.executemany(
                "INSERT INTO sections(rowid, path, body) VALUES (?, ?, ?)",
                ((rowid, relative, s) for rowid, s in batch),
            )
            db.executemany(
                "INSERT INTO digests(rowid, digest, kind) VALUES (?, ?, ?)",
                ((rowid, section_digest(s), kind) for rowid, s in batch),
            )
            n += len(batch)
        return n

    @staticmethod
    def _forget(db: sqlite3.Connection, file_id: int) -> None:
        base = file_id << _SECTION_BITS
        for table in ("sections", "digests"):
            db.execute(
                f"DELETE FROM {table} WHERE rowid >= ? AND rowid < ?",
                (base, base + (1 << _SECTION_BITS)),
            )
        db.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def total_bytes(self) -> int:
        with self._lock:
            if self._total is None:
                row = self._conn().execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()
                self._total = int(row[0])
            return self._total

    # -- query -------------------------------------------------------------------------
    def search(self, query: str, limit: int = 10) -> Found:
        """The best sections for `query` (call `refresh` first).

        Ranking is bm25 over the query's discriminating words: the rarest, while the
        sections holding them stay under `RANK_BUDGET`. A word found in most sections
        carries almost no bm25 weight yet costs time in proportion to its sections,
        so it only breaks ties among the candidates. When every word is that common,
        the result is unranked and flagged `broad`.
        """
        with self._lock:
            db = self._conn()
            counts = sorted(
                (n, stem) for stem in self._stems(db, query) if (n := self._count(db, stem))
            )
            chosen: list[str] = []
            total = 0
            for n, stem in counts:
                if total + n > RANK_BUDGET:
                    break
                chosen.append(stem)
                total += n
            broad = bool(counts) and not chosen
            rows = self._candidates(db, chosen or [s for _, s in counts], broad, limit * 4)
            db.commit()  # ends the scratch table's write: no snapshot is left open
        words = {w.lower() for w in _WORD.findall(query)}
        lowered = {id(hit): hit.text.lower() for hit in rows}
        ranked = sorted(rows, key=lambda hit: -sum(w in lowered[id(hit)] for w in words))
        return Found(ranked[:limit], broad)

    @staticmethod
    def _stems(db: sqlite3.Connection, query: str) -> list[str]:
        """The query's words as the index stores them, stemmed by SQLite's own tokenizer
        through a scratch table (so "decided" finds "decide")."""
        db.execute("DELETE FROM temp.query")
        db.execute("INSERT INTO temp.query(body) VALUES (?)", (query,))
        stems = [row[0] for row in db.execute("SELECT term FROM temp.query_terms")]
        return [s.replace('"', "") for s in stems[:32]]

    @staticmethod
    def _count(db: sqlite3.Connection, stem: str) -> int:
        """Sections holding `stem`, counted only up to just past the budget (cheap)."""
        row = db.execute(
            "SELECT count(*) FROM (SELECT rowid FROM sections WHERE sections MATCH ? LIMIT ?)",
            (f'"{stem}"', RANK_BUDGET + 1),
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _candidates(db: sqlite3.Connection, stems: list[str], broad: bool, n: int) -> list[Hit]:
        if not stems:
            return []
        quoted = [f'"{s}"' for s in stems]
        if broad:  # only common words: sections with all of them, else any, unranked
            sql = "SELECT path, body FROM sections WHERE sections MATCH ? LIMIT ?"
            rows = db.execute(sql, (" AND ".join(quoted), n)).fetchall()
            rows = rows or db.execute(sql, (" OR ".join(quoted), n)).fetchall()
        else:
            rows = db.execute(
                "SELECT path, body, rank FROM sections WHERE sections MATCH ? ORDER BY rank "
                "LIMIT ?",
                (" OR ".join(quoted), n),
            ).fetchall()
        return [Hit(row[0], row[1], row[2] if len(row) > 2 else 0.0) for row in rows]


def begin_writing(db: sqlite3.Connection) -> None:
    """Take the write lock now (waiting for another process's writer), ending first any
    read left open, so what this connection read is current when it writes."""
    if db.in_transaction:
        db.commit()
    db.execute("BEGIN IMMEDIATE")


def section_digest(section: str) -> bytes:
    """The key of a section's embedding: the hash of the text the model reads."""
    return hashlib.blake2b(section[:EMBED_CHARS].encode(), digest_size=16).digest()


def plain_scan(files: AgentFiles, query: str, limit: int = 10) -> list[Hit]:
    """Read every file and rank sections by how many query words they contain."""
    words = [w.lower() for w in _WORD.findall(query)]
    scored: list[tuple[int, int, Hit]] = []
    for path in files.memory_files():
        relative = files.relative(path)
        for section in split_sections(path.read_text(encoding="utf-8", errors="replace")):
            lowered = section.lower()
            score = sum(lowered.count(w) for w in words)
            if score:
                scored.append((-score, len(scored), Hit(relative, section)))
    scored.sort(key=lambda item: item[:2])
    return [hit for _, _, hit in scored[:limit]]
