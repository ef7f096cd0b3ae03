"""The meaning half of a memory index: one embedding per section, in the same derived
`.search.sqlite` as the FTS5 index (table `vectors`, a float16 blob keyed by the hash
of the section's text, so a section that did not change is never embedded again), and
cosine similarity over them.

Embedding happens in the thread that runs the search (never on the event loop), in
batches, for at most `QUERY_SECONDS` per search; what is left (a 50 MB log, a first
search over a large memory) is embedded by a background thread that uses at most half
a core and stops when done. Until then, meaning covers the sections embedded so far and
keywords cover every section. The index lock is not held while the model runs.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

from agents.memory.embedding import Embedder

if TYPE_CHECKING:
    import numpy as np

    from agents.memory.search import Hit, MemoryIndex

from agents.memory.embedding import QUERY_SECONDS
from agents.memory.search import begin_writing

DRAIN_SLICE = 0.5  # the background thread's work between rests as long
BATCH_SECTIONS = 256


class Vectors:
    def __init__(self, index: MemoryIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder
        self._embedding = threading.Lock()  # one catch-up at a time per index
        self._done_at: tuple[int, int] | None = None  # stamp when nothing was pending
        self._todo: tuple[tuple[int, int], list[tuple[bytes, int]]] | None = None
        self._matrix: tuple[Any, Any, Any] | None = None  # stamp, rowids, float16 rows
        self._writes = 0
        self._draining = False
        self._flag = threading.Lock()  # guards _draining
        self.pending = 0  # sections without a vector after the last catch-up

    # -- embedding ---------------------------------------------------------------------
    def _stamp(self, db: sqlite3.Connection) -> tuple[int, int]:
        """Changes by this index's syncs, and commits by other connections (processes)."""
        return self.index.changes, int(db.execute("PRAGMA data_version").fetchone()[0])

    def catch_up(self, seconds: float | None = None) -> int:
        """Embed sections that have no vector yet, for about `seconds`; returns how many
        are left (-1: the model is unavailable). Starts the background thread if some are."""
        if not self._embedding.acquire(blocking=False):
            return self.pending  # the background thread is at it: use what is there
        try:
            left = self._catch_up(QUERY_SECONDS if seconds is None else seconds)
        finally:
            self._embedding.release()
        if left > 0:
            self._drain_later()
        return left

    def _catch_up(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        with self.index.db() as db:
            stamp = self._stamp(db)
            if stamp == self._done_at:
                return 0
            if self._todo is None or self._todo[0] != stamp:  # listed once per change
                self._todo = (stamp, self._missing(db))
        todo = self._todo[1]
        while todo and time.monotonic() < deadline:
            batch = todo[-BATCH_SECTIONS:]
            if not self._embed(batch):
                self.pending = -1
                return -1
            del todo[-len(batch) :]
        self.pending = len(todo)
        if not todo:
            self._done_at = stamp
        return self.pending

    def _missing(self, db: sqlite3.Connection) -> list[tuple[bytes, int]]:
        """Sections without a vector (one per distinct text), the first to embed last:
        curated notes before transcripts, newer files first."""
        begin_writing(db)  # another process may write: wait for it
        self._check_model(db)
        db.execute("DELETE FROM vectors WHERE digest NOT IN (SELECT digest FROM digests)")
        db.commit()
        rows = db.execute(
            "SELECT d.rowid, d.digest FROM digests d LEFT JOIN vectors v "
            "ON v.digest = d.digest WHERE v.digest IS NULL ORDER BY d.kind DESC, d.rowid"
        )
        todo: dict[bytes, int] = {}
        for rowid, digest in rows:
            todo[digest] = rowid
        return list(todo.items())

    def _embed(self, batch: list[tuple[bytes, int]]) -> bool:
        with self.index.db() as db:
            marks = ",".join("?" * len(batch))
            bodies = dict(
                db.execute(
                    f"SELECT rowid, body FROM sections WHERE rowid IN ({marks})",
                    [rowid for _, rowid in batch],
                ).fetchall()
            )
        found = [(digest, bodies[rowid]) for digest, rowid in batch if rowid in bodies]
        vectors = self.embedder.embed([body for _, body in found]) if found else None
        if vectors is None:
            return not found  # nothing to embed, or the model is unavailable
        blobs = vectors.astype("float16")
        with self.index.db() as db:
            begin_writing(db)
            db.executemany(
                "INSERT OR IGNORE INTO vectors(digest, vec) VALUES (?, ?)",
                ((digest, blobs[n].tobytes()) for n, (digest, _) in enumerate(found)),
            )
            db.commit()
            self._writes += 1
        return True

    def _check_model(self, db: sqlite3.Connection) -> None:
        """Vectors of another model are not comparable: dropped, so they are made anew."""
        rows = db.execute("SELECT value FROM meta WHERE key = 'model'").fetchall()
        if rows != [(self.embedder.name,)]:
            db.execute("DELETE FROM vectors")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (self.embedder.name,))

    def _drain_later(self) -> None:
        with self._flag:
            if self._draining:
                return
            self._draining = True
        generation = self.index.opened
        threading.Thread(target=self._drain, args=(generation,), daemon=True).start()

    def _drain(self, generation: int) -> None:
        try:
            while self.index.opened == generation:
                started = time.monotonic()
                if self.catch_up_now(DRAIN_SLICE) <= 0:
                    return
                time.sleep(time.monotonic() - started)  # at most half a core
        finally:
            self._draining = False

    def catch_up_now(self, seconds: float) -> int:
        """`catch_up` that waits its turn and never starts a thread (the drain's step)."""
        with self._embedding:
            return self._catch_up(seconds)

    # -- search ------------------------------------------------------------------------
    def nearest(self, query: np.ndarray, n: int, floor: float) -> list[Hit]:
        """The `n` sections whose meaning is closest to `query` (a unit vector), at
        least `floor` in cosine similarity; score = the similarity."""
        import numpy as np

        from agents.memory.search import Hit

        rowids, matrix = self._rows()
        if not len(rowids):
            return []
        # einsum, not `@`: BLAS threads a matrix-vector product across cores, which on a
        # busy small machine made it 10x slower (15 ms against 2 ms at 10,000 sections)
        scores = np.einsum("ij,j->i", matrix, query.astype(np.float32))
        top = np.argpartition(-scores, min(n, len(scores)) - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        chosen = [(int(rowids[i]), float(scores[i])) for i in top if scores[i] >= floor]
        if not chosen:
            return []
        with self.index.db() as db:
            marks = ",".join("?" * len(chosen))
            found = {
                row[0]: row[1:]
                for row in db.execute(
                    f"SELECT rowid, path, body FROM sections WHERE rowid IN ({marks})",
                    [rowid for rowid, _ in chosen],
                )
            }
        return [Hit(found[r][0], found[r][1], s) for r, s in chosen if r in found]

    def _rows(self) -> tuple[Any, Any]:
        """Every embedded section's rowid and vector, kept until something changes."""
        import numpy as np

        with self.index.db() as db:
            stamp = (*self._stamp(db), self._writes)
            if self._matrix is not None and self._matrix[0] == stamp:
                return self._matrix[1], self._matrix[2]
            rows = db.execute(
                "SELECT d.rowid, v.vec FROM digests d JOIN vectors v ON v.digest = d.digest"
            ).fetchall()
        rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float16)
        # float32 in memory (1 KB a section): numpy multiplies float16 many times slower
        matrix = matrix.reshape(len(rows), -1).astype(np.float32) if rows else matrix
        self._matrix = (stamp, rowids, matrix)
        return rowids, matrix
