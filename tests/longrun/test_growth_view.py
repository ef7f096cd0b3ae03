"""Growth on view: `switchboard status`'s storage lines, the dashboard's Storage card and
the /metrics gauges read the data dir, the database, its WAL and the last pruning."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

from bot.app import App
from bot.ledger.report import full_status
from bot.ops import growth_view
from bot.store.growth import tree_bytes
from config.settings import Settings
from tests.kits.app_kit import inbound


async def test_status_card_and_metrics_show_the_growth(settings: Settings) -> None:
    app = App(settings, [])
    app.build()
    try:
        app.store.journal(inbound("hello"), "routed")
        before = full_status(app.store, data_dir=settings.data_dir)
        assert re.search(r"Storage: data dir [\d.]+ MB, database [\d.]+ MB, WAL [\d.]+ MB", before)
        assert "oldest row kept: 0s ago" in before or "oldest row kept: 1s ago" in before
        assert "last pruned: never" in before
        app.pruner.run_now()
        assert "nothing to remove" in full_status(app.store, data_dir=settings.data_dir)
        app.ops.growth._read = None  # read again now, not in a minute
        card = growth_view.card(app.ops.growth)
        assert "<h2>Storage</h2>" in card and "never" not in card
        text = app.ops.metrics.render().decode()
        for name in (
            "switchboard_data_dir_bytes", "switchboard_database_bytes", "switchboard_wal_bytes",
            "switchboard_prune_last_run_timestamp_seconds", "switchboard_asyncio_tasks",
            "switchboard_wal_cuts", "switchboard_wal_cut_seconds",
            "process_resident_memory_bytes", 'switchboard_oldest_row_age_seconds{table="inbound"}',
        ):  # fmt: skip
            assert name in text, name
        size = float(text.split("\nswitchboard_database_bytes ", 1)[1].split()[0])
        assert size > 10_000
    finally:
        app.store.close()
        app.events.close()


def test_a_stale_reading_walks_the_data_dir_in_a_thread(tmp_path: Path) -> None:
    from bot.store.core import Store

    store = Store(tmp_path / "switchboard.db")
    now = [0.0]
    figures = growth_view.GrowthFigures(store, tmp_path, clock=lambda: now[0])
    try:
        first = figures.now().data_dir_bytes  # the first reading walks at once
        (tmp_path / "big").write_bytes(b"x" * 1_000_000)
        walks: list[threading.Thread] = []
        real = growth_view.tree_bytes

        def walk(root: Path) -> int:
            walks.append(threading.current_thread())
            return real(root)

        growth_view.tree_bytes = walk  # type: ignore[assignment]
        try:
            now[0] = 61.0
            stale = figures.now().data_dir_bytes  # the walk's last figure, not a new walk
            assert stale < first + 1_000_000
            assert figures._walking is not None
            figures._walking.join(5)
            now[0] = 122.0
            assert figures.now().data_dir_bytes >= first + 1_000_000
            assert walks and all(t is not threading.main_thread() for t in walks)
        finally:
            growth_view.tree_bytes = real  # type: ignore[assignment]
            if figures._walking is not None:
                figures._walking.join(5)
    finally:
        store.close()


def test_the_data_dir_is_measured_as_du_counts_it(tmp_path: Path) -> None:
    """Allocated blocks, folders and all, a hard link once: what fills the disk, which
    the files' own sizes understate (an ended worker's folder of small files)."""
    for n in range(40):
        folder = tmp_path / "agents" / f"w{n}"
        folder.mkdir(parents=True)
        (folder / "SOUL.md").write_text("a worker\n")
    (tmp_path / "big").write_bytes(b"x" * 1_000_000)
    os.link(tmp_path / "big", tmp_path / "big.link")
    du = subprocess.run(["du", "-s", "--block-size=1", str(tmp_path)], capture_output=True,
                        text=True, check=True)  # fmt: skip
    assert tree_bytes(tmp_path) == int(du.stdout.split()[0])
    assert tree_bytes(tmp_path) > 1_000_000 + 40 * 9 + 40 * 4096  # a block a folder at least
