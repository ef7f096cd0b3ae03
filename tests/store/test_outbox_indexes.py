"""The outbox's indexes (schema version 9, bot/store/migrations_sql.py), on both backends:
each holds the rows of one state, or no state, so a delivery adds an index entry
instead of moving one; every outbox query still reads an index, never the whole table;
a delivered row is kept for the retention after its delivery; and a database of version
8 is moved over at start with its rows as they were."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.core.messages import Outbound, Target
from bot.store.core import Store
from bot.store.growth import growth
from bot.store.prune import RULES, Pruner
from config.retention import DAY
from config.settings import Database
from tests.kits.store_kit import at_version

INDEXES = {"outbox_by_target", "outbox_waiting", "outbox_delivered", "outbox_given_up"}


def indexes(store: Store) -> set[str]:
    """The outbox's own indexes (not its key's nor its unique id's)."""
    if store.postgres:
        rows = store.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'outbox'")
    else:
        rows = store.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'outbox'"
                             " AND type = 'index' AND sql IS NOT NULL")  # fmt: skip
    return {r[0] for r in rows if not r[0].endswith(("_pkey", "_id_key"))}


def queue(store: Store, n: int, target: str = "slack:C1") -> list[int]:
    """`n` replies queued for `target`; their seqs, oldest first."""
    place = Target.parse(target)
    for i in range(n):
        store.outbox.enqueue(Outbound("coordinator", place, f"reply {i}"))
    return [r.seq for r in store.outbox.pending_outbox(target, 100)][-n:]


def test_a_delivery_is_kept_for_the_retention_after_it_was_sent(store: Store) -> None:
    sent_then, sent_lately, failed, corrupt, waiting = queue(store, 5)
    store.outbox.outbox_sent(sent_then, {"ts": "1"})
    store.outbox.outbox_sent(sent_lately, {"ts": "2"})
    # queued 120 days before the pruner's clock, delivered 100 days after it was queued
    store.execute("UPDATE outbox SET sent_at = ? WHERE seq = ?",
                  (time.time() + 100 * DAY, sent_lately))  # fmt: skip
    store.outbox.outbox_failed(failed, "gone")
    store.execute("UPDATE outbox SET status = 'corrupt' WHERE seq = ?", (corrupt,))
    now = time.time() + 120 * DAY

    run = Pruner(store, 90 * DAY, 365 * DAY, batch=2, clock=lambda: now).run_now()

    assert run.removed["outbox"] == 3
    left = store.execute("SELECT seq, status FROM outbox ORDER BY seq").fetchall()
    assert [tuple(r) for r in left] == [(sent_lately, "sent"), (waiting, "pending")]
    assert store.outbox.outbox_counts() == {"pending": 1, "sent": 1}


def test_every_read_is_right_through_the_indexes_of_one_state(store: Store) -> None:
    assert indexes(store) == INDEXES
    a, b, c = queue(store, 3)
    queue(store, 1, "slack:C2")
    store.outbox.outbox_sent(a, {"ts": "1"})
    store.outbox.outbox_failed(b, "gone")
    assert store.outbox.outbox_counts() == {"pending": 2, "sent": 1, "failed": 1}
    assert [r.seq for r in store.outbox.pending_outbox("slack:C1", 10)] == [c]
    assert store.outbox.outbox_pending_count("slack:C2") == 1
    assert [m.text for _, m in store.outbox.sent_between(0, time.time() + 1)] == ["reply 0"]
    assert [m.text for _, m in store.outbox.sent_to(["slack:C1"], 0, 5)] == ["reply 0"]
    said = store.views.said_to("slack:C1", 0, 10)
    assert [(s, m.text) for s, m in said] == [("sent", "reply 0"), ("failed", "reply 1"),
                                             ("pending", "reply 2")]  # fmt: skip
    sent_at = store.execute("SELECT sent_at FROM outbox WHERE seq = ?", (a,)).fetchone()[0]
    assert growth(store, Path(), walked=0).oldest_sent == sent_at


@pytest.fixture
def statements(store: Store) -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """Every statement the store runs, with its arguments."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    execute = store.execute

    def spy(sql: str, args: tuple[Any, ...] = ()) -> Any:
        seen.append((sql, args))
        return execute(sql, args)

    store.execute = spy  # type: ignore[method-assign]
    yield seen
    store.execute = execute  # type: ignore[method-assign]


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_no_outbox_query_reads_the_whole_table(
    store: Store, statements: list[tuple[str, tuple[Any, ...]]]
) -> None:
    for i in range(300):  # enough rows that a full scan is not the cheaper plan
        queue(store, 1, f"slack:C{i % 7}")
    for seq in range(1, 290):
        store.outbox.outbox_sent(seq, {"ts": str(seq)})
    store.execute("ANALYZE")
    statements.clear()
    now = time.time()
    store.outbox.new_outbox_rows(280, 10)
    store.outbox.pending_outbox("slack:C1", 10)
    store.outbox.outbox_pending_count("slack:C1")
    store.outbox.outbox_counts()
    store.outbox.sent_between(now - 60, now)
    store.outbox.sent_to(["slack:C1", "slack:C2"], now - 60, 5)
    store.outbox.sent_in(["slack:C1"], now - 60, 50)
    store.views.outbox_pending()
    store.views.said_to("slack:C1", now - 60, 10)
    growth(store, Path(), walked=0)
    reads = [(sql, args) for sql, args in statements if "FROM outbox" in sql]
    reads.append((RULES["outbox"], (now, now, 100)))
    assert len(reads) >= 12
    for sql, args in reads:
        plan = [r[3] for r in store.execute("EXPLAIN QUERY PLAN " + sql, args)]
        assert "SCAN outbox" not in plan, (sql, plan)


def version_8(database: Database) -> None:
    """A database at schema version 8 with a reply of each state in its outbox."""
    insert = ("INSERT INTO outbox (id, target, payload, status, next_at, created_at, sent_at)"
              " VALUES (?, 'slack:C1', ?, ?, 1.0, 1.0, ?)")  # fmt: skip
    payload = '{"agent": "coordinator", "target": "slack:C1", "text": "%s"}'
    states = [("p", "pending", None), ("s", "sent", 2.0), ("f", "failed", None)]
    at_version(database, 8, [(insert, (k, payload % k, st, at)) for k, st, at in states])


def test_a_version_8_outbox_is_moved_to_the_new_indexes_at_start(database: Database) -> None:
    version_8(database)
    store = Store(database)
    try:
        assert indexes(store) == INDEXES
        assert store.outbox.outbox_counts() == {"pending": 1, "sent": 1, "failed": 1}
        assert [m.text for _, m in store.outbox.sent_between(0, 3)] == ["s"]
        assert [r.message.text for r in store.outbox.pending_outbox("slack:C1", 5)] == ["p"]
    finally:
        store.close()


@pytest.mark.parametrize("database", ["postgres"], indirect=True)
def test_the_pruning_reads_the_delivered_and_given_up_indexes_on_postgres(store: Store) -> None:
    store.execute("SET enable_seqscan = off")  # an empty table: show what it can use
    now = time.time()
    plan = " ".join(str(r[0]) for r in store.execute("EXPLAIN " + RULES["outbox"], (now, now, 9)))
    assert "outbox_delivered" in plan and "outbox_given_up" in plan, plan
