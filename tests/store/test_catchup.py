"""The catchup read (bot/ledger/catchup.py) on both store backends: since the person's
last message, newest first, bounded with "and N more", their conversations only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.core.messages import Outbound, Target
from bot.inbox.people import People
from bot.ledger.catchup import LIMIT, catchup, catchup_text
from bot.store.core import Store
from bot.store.schema import QuestionRow


def _said(store: Store, text: str, conversation: str, agent: str = "coordinator") -> None:
    store.outbox.enqueue(Outbound(agent, Target.parse(conversation), text, conversation))
    for seq, _ in store.outbox.new_outbox_rows(0, 1000):
        store.outbox.outbox_sent(seq, {})


def _exercise(store: Store) -> None:
    people = People([], store, "UTC")
    ann, bob = "slack:UANN", "slack:UBOB"
    _said(store, "before ann spoke", "slack:D1")
    time.sleep(0.01)
    people.spoke("slack:D1", "UANN", ann)
    people.spoke("slack:D2", "UBOB", bob)
    for n in range(LIMIT + 5):
        _said(store, f"answer {n}", "slack:D1")
    _said(store, "bob only", "slack:D2", agent="w1")
    store.agents.add_question(QuestionRow("q1", "w1", "Which region?", "slack:D2", "slack:D2", [],
                                   "open", time.time()))  # fmt: skip

    mine = people.conversations_of({ann})
    assert mine == {"slack:D1"}
    found = catchup(store, mine, people.last_spoke({ann}), {"w1": "Alice"})
    assert [i.text for i in found.items] == [f"answer {n}" for n in reversed(range(5, LIMIT + 5))]
    assert found.more == 5
    text = catchup_text(found)
    assert text.endswith("and 5 more (older).") and "before ann spoke" not in text
    assert "bob only" not in text and "Which region?" not in text
    fitted = catchup_text(found, room=400)
    assert len(fitted) <= 400 and "answer 24" in fitted and fitted.endswith("more (older).")

    theirs = catchup(
        store, people.conversations_of({bob}), people.last_spoke({bob}), {"w1": "Alice"}
    )
    assert [(i.kind, i.speaker, i.text) for i in theirs.items] == [
        ("question", "Alice", "Which region?"),
        ("answer", "Alice", "bob only"),
    ]
    assert people.last_spoke({"slack:UNOBODY"}) is None
    assert catchup_text(catchup(store, set(), None, {})) == "Nothing to catch up on."


def test_catchup_on_sqlite(tmp_path: Path) -> None:
    store = Store(tmp_path / "switchboard.db")
    try:
        _exercise(store)
    finally:
        store.close()


@pytest.mark.slow
def test_catchup_on_postgres(pg_url: str) -> None:
    store = Store(pg_url)
    try:
        _exercise(store)
    finally:
        store.close()


def _sent_in_sql(store: Store) -> str:
    """The statement `sent_in` runs, with its values (SQLite's trace)."""
    ran: list[str] = []
    store.db.raw.set_trace_callback(ran.append)  # type: ignore[union-attr]
    store.outbox.sent_in({"slack:D1"}, 100.0, 50)
    store.db.raw.set_trace_callback(None)  # type: ignore[union-attr]
    [sql] = [s for s in ran if "FROM outbox" in s]
    return sql


def test_catchup_reads_the_newest_deliveries_by_an_index_on_sqlite(tmp_path: Path) -> None:
    """Months of sent rows: the read walks the delivered rows' index (`sent_at`, only
    sent rows) backwards from the newest and stops at its bound; no scan, no sort."""
    store = Store(tmp_path / "switchboard.db")
    try:
        sql = _sent_in_sql(store)
        plan = " ".join(row[3] for row in store.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING INDEX outbox_delivered" in plan, plan
        assert "SCAN outbox" not in plan.replace("SCAN outbox USING", "")
        assert "TEMP B-TREE" not in plan, plan
    finally:
        store.close()


@pytest.mark.slow
def test_catchup_reads_the_newest_deliveries_by_an_index_on_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    sqlite = Store(tmp_path / "switchboard.db")
    try:
        sql = _sent_in_sql(sqlite)
    finally:
        sqlite.close()
    store = Store(pg_url)
    try:
        store.execute("SET enable_seqscan = off")  # an empty table: show what it can use
        plan = " ".join(str(r[0]) for r in store.execute("EXPLAIN " + sql))
        assert "outbox_delivered" in plan and "Sort" not in plan, plan
    finally:
        store.close()
