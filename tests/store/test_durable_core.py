"""The core's two durability helpers, on a real store: watermarks (bot/inbox/watermarks.py)
and attempt records (bot/outbox/attempts.py)."""

from __future__ import annotations

import time

from bot.core.messages import Outbound, Target
from bot.inbox.watermarks import UNKNOWN, Watermarks
from bot.outbox.attempts import Attempts
from bot.store.core import AttemptRow, Store
from config.settings import Database


def marks(store: Store) -> Watermarks:
    return Watermarks(store, "demo", int, float)


def test_a_watermark_moves_only_where_no_gap_can_lie_behind_it(database: Database) -> None:
    store = Store(database)
    w = marks(store)
    w.live("a", "10")  # a new process: its catch-up has not said what it reads yet
    assert w.get("a") is None
    w.catching_up(["a"])
    w.live("a", "20")  # live while "a" is being caught up: the gap may lie before it
    w.live("b", "5")  # a place not caught up: nothing unread can lie behind it
    assert (w.get("a"), w.get("b")) == (None, "5")
    w.caught_up("a", "15", complete=False)  # stopped at a bound: moves, stays pending
    w.live("a", "25")
    assert w.get("a") == "15"
    w.caught_up("a", "30")
    w.live("a", "40")
    w.live("a", "35")  # never backwards
    assert w.get("a") == "40"
    w.new_session()  # a session that was replayed nothing
    w.live("a", "50")
    assert w.get("a") == "40"
    again = marks(store)  # what the next process reads
    assert {p.place: p.mark for p in again.load()} == {"a": "40", "b": "5"}


def test_opened_forget_and_a_corrupt_mark(database: Database) -> None:
    store = Store(database)
    w = marks(store)
    w.catching_up([])
    w.opened("t", "7")
    w.opened("t", "3")  # a place opens once
    w.live("gone", "9")
    w.forget("gone")
    store.set_kv("demo.watermark.bad", "{not json")
    loaded = {p.place: p.mark for p in marks(store).load()}
    assert loaded == {"t": "7", "bad": UNKNOWN}
    # the unknown mark is kept (durably) until the place is read
    assert {p.place: p.mark for p in marks(store).load()}["bad"] == UNKNOWN
    quarantined = store.db.execute("SELECT source, row_key FROM quarantine").fetchall()
    assert quarantined == [("kv", "demo.watermark.bad")]


def test_listening_since_is_the_newest_mark_or_the_first_run(database: Database) -> None:
    store = Store(database)
    w = marks(store)
    assert w.listening_since(100.0) == 100.0
    assert w.listening_since(500.0) == 100.0  # recorded at the first call
    w.catching_up([])
    w.live("a", "300")
    assert w.listening_since(900.0) == 300.0


async def test_a_part_is_posted_once_and_a_lost_answer_is_looked_up(database: Database) -> None:
    store = Store(database)
    posts: list[str] = []

    async def post() -> dict[str, str]:
        posts.append("x")
        return {"id": f"p{len(posts)}"}

    async def nowhere(tried: AttemptRow) -> None:
        return None

    first = Attempts(store, "o1")
    assert await first.once("0", post, nowhere) == {"id": "p1"}
    assert await Attempts(store, "o1").once("0", post, nowhere) == {"id": "p1"}
    assert posts == ["x"]

    # tried, answer never recorded (killed after the platform's answer)
    store.outbox.set_attempt("o1", AttemptRow("1", "trying", {"where": "C1"}, time.time()))
    seen: list[dict[str, str]] = []

    async def found(tried: AttemptRow) -> dict[str, str]:
        seen.append(dict(tried.detail))
        return {"id": "p-found"}

    assert await Attempts(store, "o1").once("1", post, found) == {"id": "p-found"}
    assert seen == [{"where": "C1"}] and posts == ["x"]
    # tried, and the lookup finds nothing: posted now
    store.outbox.set_attempt("o1", AttemptRow("2", "trying", {}, time.time()))
    assert await Attempts(store, "o1").once("2", post, nowhere) == {"id": "p2"}


def test_the_records_go_with_the_outbox_row(database: Database) -> None:
    store = Store(database)
    for oid in ("sent", "failed"):
        store.outbox.enqueue(Outbound("coordinator", Target.parse("slack:C1"), oid, id=oid))
        store.outbox.set_attempt(oid, AttemptRow("0", "posted", {"ts": "1.0"}, 1.0))
    seqs = dict(store.db.execute("SELECT id, seq FROM outbox").fetchall())
    store.outbox.outbox_sent(seqs["sent"], {})
    store.outbox.outbox_failed(seqs["failed"], "refused")
    assert store.outbox.attempts("sent") == [] and store.outbox.attempts("failed") == []
    store.db.execute("INSERT INTO attempts VALUES ('o2', '0', 'weird', '{}', 0)")
    assert store.outbox.attempts("o2") == [AttemptRow("0", "trying", {}, 0.0)]  # looked up first
