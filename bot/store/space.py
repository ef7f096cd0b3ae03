"""A full disk: noticed, said, and new work refused cleanly until there is room again.

`DiskWatch` looks at the free space of the data dir's file system (at most once a second)
and is told of every write that failed for want of space (SQLite's "database or disk is
full", ENOSPC). While the disk is full the store refuses to journal a new message
(`StoreFull`, before anything is written): the channel then does not ack it, and the
platform delivers it again later (Slack and Discord redeliver an unacknowledged event;
IMAP leaves the mail unseen). What was acknowledged before stays: it was committed.
`/healthz` says `"disk": "full"` (503) and the log says so once, and again once it clears.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from bot.store.errors import StoreError, StoreUnavailable

log = logging.getLogger(__name__)

#: free space under which the disk counts as full: 32 MB, or 2% of a small file system
FLOOR_BYTES = 32 * 1024 * 1024
FLOOR_SHARE = 0.02
CHECK_SECONDS = 1.0


class StoreFull(StoreUnavailable):
    """The data dir's disk is full: nothing new is taken until there is room."""


def out_of_space(exc: BaseException) -> bool:
    """Whether a write failed for want of space (SQLite's SQLITE_FULL, or ENOSPC)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, StoreError) and "disk is full" in str(exc)


class DiskWatch:
    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.full = False
        self.free_bytes: int | None = None
        self._checked = float("-inf")

    def check(self) -> bool:
        """True while the disk is full (free space re-read at most once a second)."""
        if self.clock() - self._checked >= CHECK_SECONDS:
            self._checked = self.clock()
            try:
                st = os.statvfs(self.path)
            except OSError:
                return self.full
            self.free_bytes = st.f_bavail * st.f_frsize
            floor = min(FLOOR_BYTES, int(st.f_blocks * st.f_frsize * FLOOR_SHARE))
            self._set(self.free_bytes < floor)
        return self.full

    def hit(self, exc: BaseException) -> None:
        """A write failed for want of space."""
        self._checked = self.clock()  # believe the failure until the next look
        self._set(True, str(exc))

    def refuse_new(self) -> None:
        """Raise StoreFull while the disk is full: called before journaling new work."""
        if self.check():
            raise StoreFull(f"the disk of {self.path} is full: new messages wait")

    def state(self) -> str:
        return "full" if self.check() else "ok"

    def _set(self, full: bool, why: str = "") -> None:
        if full and not self.full:
            log.error(
                "the disk of %s is full (%s free%s): new messages are refused until "
                "there is room; nothing acknowledged is lost",
                self.path, _mb(self.free_bytes), f"; {why}" if why else "",
            )  # fmt: skip
        elif self.full and not full:
            log.warning("the disk of %s has room again (%s free)", self.path, _mb(self.free_bytes))
        self.full = full


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:.1f} MB"
