"""What a fake records, bounded for a long soak.

A test reads a fake's records whole: every post, call and envelope of its few seconds.
A soak of an hour would hold millions of them, and the soak's own process would grow by
gigabytes and pause for its collections while it serves the bot (tests/bench/bench_soak.py).
So a record is a `Kept` list: a list as tests know it, which, once the soak sets its
`keep`, holds only about the newest `keep` rows. A reader on another thread reads on from
a count with `since`, never by index, and hears it if it fell behind what was kept.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class FellBehind(LookupError):
    """A reader asked for rows the record no longer keeps."""


class Kept(list[T]):
    """A list whose `append` drops the oldest rows, down to the newest `keep`, once it
    holds twice that many (`keep` None: it keeps every row, as tests read them)."""

    def __init__(self) -> None:
        super().__init__()
        self.keep: int | None = None
        self.dropped = 0  # rows dropped from the front so far
        self._lock = threading.Lock()

    def append(self, row: T) -> None:
        with self._lock:
            super().append(row)
            if self.keep is not None and len(self) > 2 * self.keep:
                cut = len(self) - self.keep
                del self[:cut]
                self.dropped += cut

    def extend(self, rows: Iterable[T]) -> None:
        for row in rows:
            self.append(row)

    @property
    def total(self) -> int:
        """Rows ever appended, the dropped ones too."""
        return self.dropped + len(self)

    def since(self, n: int) -> tuple[list[T], int]:
        """The rows after the first `n` ever appended, and the count to read on from."""
        with self._lock:
            if n < self.dropped:
                raise FellBehind(f"{self.dropped - n} rows were dropped unread: raise `keep`")
            return self[n - self.dropped :], self.dropped + len(self)


def newest(rows: dict[K, V], keep: int | None) -> dict[K, V]:
    """`rows` (oldest first, as inserted), or its newest `keep` once it holds twice that:
    a new dict, so a reader on another thread iterating the old one is not disturbed."""
    if keep is None or len(rows) <= 2 * keep:
        return rows
    items = list(rows.items())
    return dict(items[-keep:])


def bound(keep: int, *records: Kept[object]) -> None:
    for record in records:
        record.keep = keep
