"""Appends made durable from a thread of their own, soon after they are written.

An append to a memory file (a daily log, a team note) reaches the operating system at
once: a reader sees it, and a process killed right after loses nothing. Its fsync, what
a power cut needs, runs here, in one thread, a moment later: on a slow disk (network
storage, an SD card: an fsync of 0.5 s) an fsync in the caller held the event loop, and
with it every conversation, for that long at each worker's published result and each
captured decision. The store does the same (SQLite's `synchronous=NORMAL`: a commit is
not synced, a checkpoint is), so a power cut loses at most the last moment of both.
Whole-file rewrites still sync before their rename (files.py `_atomic_write`): a rename
of unsynced data can leave an empty file after a power cut.

An fsync slower than SLOW_SECONDS is logged once (and once more when syncs are quick
again): the operator learns why answers lag, since a SQLite database's commits wait for
the same disk at times.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

#: an fsync slower than this says the data dir's disk is slow (a local SSD: ~1-5 ms)
SLOW_SECONDS = 0.2


class Syncer:
    """Paths to fsync, each once however often it was appended to meanwhile."""

    def __init__(self) -> None:
        self._due: dict[Path, None] = {}  # bounded by the memory files written in a moment
        self._busy = 0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        #: whether the last fsync was slow (said once each way)
        self.slow = False

    def later(self, path: Path) -> None:
        with self._changed:
            self._due[path] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memory-sync", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until every path handed over so far is synced; False at the timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._due and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._due))
                paths, self._due = list(self._due), {}
                self._busy = len(paths)
            for path in paths:
                started = time.monotonic()
                _sync(path)
                self._timed(path, time.monotonic() - started)
            with self._changed:
                self._busy = 0
                self._changed.notify_all()

    def _timed(self, path: Path, seconds: float) -> None:
        slow = seconds > SLOW_SECONDS
        if slow and not self.slow:
            log.warning("the data dir's disk is slow: an fsync of %s took %.2f s (memory is "
                        "synced in the background; a SQLite database on this disk holds "
                        "answers up at times)", path, seconds)  # fmt: skip
        elif self.slow and not slow:
            log.warning("the data dir's disk is quick again (an fsync took %.3f s)", seconds)
        self.slow = slow


def _sync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # folded or moved since: its new place was synced there
        return
    except OSError as exc:
        log.warning("could not sync %s: %s", path, exc)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        log.warning("could not sync %s: %s", path, exc)
    finally:
        os.close(fd)


#: the process's one syncer (memory files of every agent)
SYNCER = Syncer()
