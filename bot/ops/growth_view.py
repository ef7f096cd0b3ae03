"""The growth of the data dir on /metrics (and for the dashboard's card): data dir,
database and WAL bytes, the age of the oldest row kept, when pruning last ran, and the
process's own resident memory, open files and asyncio tasks (docs/running-for-months.md).

The figures walk the data dir: read at most once a minute, whatever the scrape rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import ProcessCollector

from bot.ops.html import Markup, section, table, when
from bot.store.growth import Growth, growth

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

    def now(self) -> Growth:
        if self._read is None or self.clock() - self._read[0] > FRESH_SECONDS:
            self._read = (self.clock(), growth(self.store, self.data_dir))
        return self._read[1]


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
