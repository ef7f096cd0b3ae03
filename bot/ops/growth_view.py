"""The growth of the data dir on /metrics (and for the dashboard's card): data dir,
database and WAL bytes, the age of the oldest row kept, when pruning last ran, and the
process's own resident memory, open files and asyncio tasks (docs/running-for-months.md).

The figures walk the data dir: read at most once a minute, whatever the scrape rate, and
after the first reading in a thread (a walk of a large data dir took 50-300 ms, once a
minute, on the event loop: the soak's pickup spikes); the database's figures are
index lookups and file sizes, read at once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import ProcessCollector

from bot.ops.html import Markup, section, table, when
from bot.store.growth import Growth, growth, tree_bytes

if TYPE_CHECKING:
    from pathlib import Path

    from bot.ops.metrics import Metrics
    from bot.store.core import Store

#: how long one reading of the figures serves
FRESH_SECONDS = 60.0


class GrowthFigures:
    """The latest `Growth` of an app's store and data dir, read again when stale."""

    def __init__(
        self, store: Store, data_dir: Path, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.data_dir = data_dir
        self.clock = clock
        self._read: tuple[float, Growth] | None = None
        self._walking: threading.Thread | None = None
        self._walked: int | None = None  # the data dir's bytes, as the last walk found

    def now(self) -> Growth:
        if self._read is None or self.clock() - self._read[0] > FRESH_SECONDS:
            g = growth(self.store, self.data_dir, self._walked)  # walks the first time
            if self._walked is None:
                self._walked = g.data_dir_bytes
            else:
                self._walk()  # for the next reading
            self._read = (self.clock(), g)
        return self._read[1]

    def _walk(self) -> None:
        """Walk the data dir again in a thread; the next reading shows what it found."""
        if self._walking is not None and self._walking.is_alive():
            return

        def walk() -> None:
            self._walked = tree_bytes(self.data_dir)

        self._walking = threading.Thread(target=walk, name="growth-walk", daemon=True)
        self._walking.start()


def install(store: Store, data_dir: Path, metrics: Metrics) -> GrowthFigures:
    """Register the growth gauges (and the process collector) on `metrics`."""
    figures = GrowthFigures(store, data_dir)
    ProcessCollector(registry=metrics.registry)  # process_resident_memory_bytes, open fds
    gauge = metrics.gauge
    gauge(
        "switchboard_data_dir_bytes",
        "Bytes under the data dir",
        lambda: figures.now().data_dir_bytes,
    )
    gauge(
        "switchboard_database_bytes", "Bytes of the database", lambda: figures.now().database_bytes
    )
    gauge(
        "switchboard_wal_bytes",
        "Bytes of the SQLite WAL (0 on PostgreSQL)",
        lambda: figures.now().wal_bytes,
    )
    gauge(
        "switchboard_oldest_row_age_seconds",
        "Age of the oldest row kept, by table (0: none)",
        lambda: _ages(figures.now()),
        ("table",),
    )
    gauge(
        "switchboard_prune_last_run_timestamp_seconds",
        "Unix time pruning last ran (0: never)",
        lambda: run.at if (run := figures.now().last_prune) else 0.0,
    )
    gauge(
        "switchboard_wal_cuts",
        "Times the WAL keeper cut the SQLite WAL (TRUNCATE) since start",
        lambda: store.wal.cuts if store.wal else 0,
    )
    gauge(
        "switchboard_wal_cut_seconds",
        "Seconds those cuts took, each holding the store's writers",
        lambda: store.wal.cut_seconds if store.wal else 0.0,
    )
    gauge("switchboard_asyncio_tasks", "Tasks on the event loop", lambda: len(asyncio.all_tasks()))
    return figures


def _ages(g: Growth) -> dict[tuple[str, ...], float]:
    now = time.time()
    return {
        ("inbound",): now - g.oldest_inbound if g.oldest_inbound else 0.0,
        ("outbox",): now - g.oldest_sent if g.oldest_sent else 0.0,
    }


def card(figures: GrowthFigures) -> Markup:
    """The dashboard's Storage card."""
    g = figures.now()
    run = g.last_prune
    oldest = min((t for t in (g.oldest_inbound, g.oldest_sent) if t), default=None)
    rows = [
        ["data dir", f"{g.data_dir_bytes / 1e6:.1f} MB"],
        ["database", f"{g.database_bytes / 1e6:.1f} MB"],
        ["WAL", f"{g.wal_bytes / 1e6:.1f} MB"],
        ["oldest row kept", when(oldest)],
        ["last pruned", when(run.at) if run else "never"],
    ]
    return section("Storage", table(["", ""], rows))
