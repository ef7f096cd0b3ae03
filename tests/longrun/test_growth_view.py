"""Growth on view: `switchboard status`'s storage lines, the dashboard's Storage card and
the /metrics gauges read the data dir, the database, its WAL and the last pruning."""

from __future__ import annotations

import re

from bot.app import App
from bot.ledger.report import full_status
from bot.ops import growth_view
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
            "process_resident_memory_bytes", 'switchboard_oldest_row_age_seconds{table="inbound"}',
        ):  # fmt: skip
            assert name in text, name
        size = float(text.split("\nswitchboard_database_bytes ", 1)[1].split()[0])
        assert size > 10_000
    finally:
        app.store.close()
        app.events.close()
