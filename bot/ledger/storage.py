"""`switchboard status`'s storage lines: how big the data dir, the database and its WAL
are, the oldest row kept, and when pruning last ran (docs/running-for-months.md)."""

from __future__ import annotations

from pathlib import Path

from bot.ledger.status import ago
from bot.store.core import Store
from bot.store.growth import growth


def storage_section(store: Store, data_dir: Path) -> str:
    g = growth(store, data_dir)
    wal = "" if store.postgres else f", WAL {g.wal_bytes / 1e6:.1f} MB"
    oldest = min((t for t in (g.oldest_inbound, g.oldest_sent) if t), default=None)
    run = g.last_prune
    pruned = "never" if run is None else f"{ago(run.at)} ({_removed(run.removed)})"
    return (
        f"Storage: data dir {g.data_dir_bytes / 1e6:.1f} MB, database "
        f"{g.database_bytes / 1e6:.1f} MB{wal}\n"
        f"  oldest row kept: {ago(oldest) if oldest else 'none'}; last pruned: {pruned}"
    )


def _removed(removed: dict[str, int]) -> str:
    if not removed:
        return "nothing to remove"
    return ", ".join(f"{n} {name}" for name, n in sorted(removed.items())) + " removed"
