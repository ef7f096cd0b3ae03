"""The store's PostgreSQL session when the server ends it (bot/store/postgres.py): opened
again at the next statement with its settings, never in the middle of a transaction,
never when it held the leader's lock (then fenced)."""

from __future__ import annotations

import pytest

from bot.store import postgres
from bot.store.errors import Fenced, StoreUnavailable
from tests.kits.pgcluster import PgCluster


def session(url: str) -> postgres.Connection:
    db = postgres.connect(url)
    db.configure("SET idle_session_timeout = 4321")
    return db


def test_a_lost_session_is_opened_again_with_its_settings(
    pg_url: str, pg_cluster: PgCluster
) -> None:
    db = session(pg_url)
    assert pg_cluster.terminate(db.raw.info.backend_pid)
    with pytest.raises(StoreUnavailable):
        db.execute("SELECT 1")  # the statement that finds it gone
    assert db.execute("SHOW idle_session_timeout").fetchone()[0] == "4321ms"


def test_a_session_lost_inside_a_transaction_is_not_opened_again_until_it_ends(
    pg_url: str, pg_cluster: PgCluster
) -> None:
    db = session(pg_url)
    db.execute("CREATE TABLE t (x INTEGER)")
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t VALUES (1)")
    assert pg_cluster.terminate(db.raw.info.backend_pid)
    for _ in range(2):  # the rest of the transaction would land alone: refused
        with pytest.raises(StoreUnavailable):
            db.execute("INSERT INTO t VALUES (2)")
    db.execute("ROLLBACK")  # the server undid it: the store's own error stands
    assert db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0


def test_a_lost_session_that_held_the_lock_is_fenced_for_good(
    pg_url: str, pg_cluster: PgCluster
) -> None:
    db = session(pg_url)
    db.hold("the leader's lock")
    assert pg_cluster.terminate(db.raw.info.backend_pid)
    with pytest.raises(StoreUnavailable):
        db.execute("SELECT 1")
    for _ in range(2):
        with pytest.raises(Fenced, match="fenced: the session that held"):
            db.execute("SELECT 1")
