"""A table of the store built alone on a bare SQL handle (bot/store/sql.py), no `Store`:
what a table needs of its database is the handle's four methods, nothing more."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot.core.channel import AttemptRow
from bot.core.messages import Outbound, Target
from bot.store import migrations, sqlite
from bot.store.approvals import ApprovalRow, ApprovalRows
from bot.store.outbox import OutboxTables
from bot.store.sql import Cursor, Sql

T = TypeVar("T")


class BareSql:
    """The handle and nothing else: one SQLite connection with the schema; what does not
    decode is kept aside in `bad`, what is announced in `topics`."""

    def __init__(self, path: Path) -> None:
        raw = migrations.connect(path, False)
        migrations.migrate(raw, path)
        self.db = sqlite.Connection(raw)
        self.bad: list[tuple[str, Any]] = []
        self.topics: list[str] = []
        self.commits = 0

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Cursor:
        return self.db.execute(sql, args)

    def decode(self, source: str, rows: Iterable[Any], decode: Callable[[Any], T]) -> list[T]:
        out = []
        for row in rows:
            try:
                out.append(decode(row))
            except ValueError:
                self.bad.append((source, row[0]))
        return out

    @contextmanager
    def tx(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        self.commits += 1

    def notify(self, topic: str) -> None:
        self.topics.append(topic)


@pytest.fixture
def sql(tmp_path: Path) -> Iterator[BareSql]:
    handle = BareSql(tmp_path / "bare.db")
    yield handle
    handle.db.close()


def _handle(sql: BareSql) -> Sql:
    return sql  # mypy checks here that the bare handle is a `Sql`


def test_the_approvals_table_works_on_a_bare_handle(sql: BareSql) -> None:
    rows = ApprovalRows(_handle(sql))
    rows.add(ApprovalRow("a1", "coordinator", "c1", "Ada", "web_fetch", {"url": "x"}, "tu1", "t"))
    assert [r.id for r in rows.pending()] == ["a1"]
    assert rows.decide("a1", True, "Bob", None) is True
    assert rows.decide("a1", False, "Eve", None) is False  # the first decision counts
    assert rows.start("a1") is True and rows.start("a1") is False
    got = rows.get("a1")
    assert got is not None and (got.status, got.decided_by) == ("running", "Bob")


def test_a_row_that_does_not_decode_goes_to_the_handle(sql: BareSql) -> None:
    rows = ApprovalRows(_handle(sql))
    rows.add(ApprovalRow("a2", "coordinator", "c1", "Ada", "web_fetch", {}, "tu2", "t"))
    sql.execute("UPDATE approvals SET args = ? WHERE id = 'a2'", ("{not json",))
    assert rows.get("a2") is None
    assert sql.bad == [("approvals", "a2")]
    assert json.loads(sql.execute("SELECT refs FROM approvals").fetchone()[0]) == []


def test_the_outbox_announces_and_settles_through_its_handle(sql: BareSql) -> None:
    """The outbox is the table that uses the whole handle: it announces a queued message
    (`notify`) and drops a sent message's attempt records in the same transaction."""
    outbox = OutboxTables(_handle(sql))
    msg = Outbound("coordinator", Target.parse("terminal"), "hello")
    outbox.enqueue(msg)
    assert sql.topics == ["outbox"]
    [(seq, target)] = outbox.new_outbox_rows(0, 10)
    outbox.set_attempt(msg.id, AttemptRow("0", "posted", {"ts": "1"}, 1.0))
    assert [a.part for a in outbox.attempts(msg.id)] == ["0"]
    commits = sql.commits
    outbox.outbox_sent(seq, {"ts": "1"})
    assert sql.commits == commits + 1
    assert outbox.attempts(msg.id) == []
    assert outbox.outbox_counts() == {"sent": 1} and target == "terminal"
