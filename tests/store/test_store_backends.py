"""Every table of the store on both backends (SQLite, PostgreSQL): the same unique keys
deduplicate the same way, the same reads give the same types, and a corrupt row, a
rolled-back transaction and a newer schema are handled alike. One set of SQL
(bot/store/*.py); the backend comes from the `database` fixture (tests/conftest.py)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.job import Job
from apscheduler.jobstores.base import ConflictingIdError
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.date import DateTrigger

from bot.core.messages import BusMessage, Outbound, Target
from bot.store import core as store_core
from bot.store import migrations
from bot.store.approvals import ApprovalRow
from bot.store.core import AttemptRow, QuestionRow, Store, WorkerRow
from bot.store.errors import Conflict, MissingTable
from bot.store.migrations import VERSION, SchemaTooNew
from bot.store.usage import UsageRow
from bot.triggers import jobstore
from bot.triggers.jobstore import BatchedJobStore
from config.settings import Database
from tests.kits.app_kit import inbound
from tests.kits.pgcluster import PgCluster

HOUR = 3600.0


def count(store: Store, table: str) -> int:
    return int(store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def test_inbound_is_journaled_once_per_channel_and_message_id(store: Store) -> None:
    first = store.journal(inbound("hi", message_id="m1"))
    assert isinstance(first, int)
    assert store.journal(inbound("again", message_id="m1")) is None
    assert store.journal(inbound("hi", message_id="m1", channel="slack")) not in (None, first)
    assert [m.text for _, m in store.pending_inbound()] == ["hi", "hi"]
    mail = store.put_mail(BusMessage("ann", "coordinator", "x"))
    assert [i for i, _ in store.all_mail()] == [mail]


def test_an_outbox_id_is_queued_once(store: Store) -> None:
    msg = Outbound("coordinator", Target("terminal"), "hello")
    store.outbox.enqueue(msg)
    store.outbox.enqueue(msg)
    assert store.outbox.outbox_counts() == {"pending": 1}
    [(seq, target)] = store.outbox.new_outbox_rows(0, 10)
    assert target == "terminal" and store.outbox.pending_outbox("terminal", 10)[0].seq == seq


def test_an_attempt_is_one_record_per_outbox_id_and_part(store: Store) -> None:
    store.outbox.set_attempt("o1", AttemptRow("0", "trying", {}, 1.0))
    store.outbox.set_attempt("o1", AttemptRow("0", "posted", {"ts": "1.2"}, 2.0))
    store.outbox.set_attempt("o1", AttemptRow("1", "trying", {}, 3.0))
    assert store.outbox.attempts("o1") == [
        AttemptRow("0", "posted", {"ts": "1.2"}, 2.0),
        AttemptRow("1", "trying", {}, 3.0),
    ]


#: keys a non-C collation sorts otherwise than by bytes: case folded ("P:"), punctuation
#: weighed apart from letters ("p-", "p;"), characters past U+FFFF
KEYS = ("p:a", "p:Z", "p:é", "p:\U0001f600", "P:x", "p;", "p-", "pa", "p", "p:")


@pytest.fixture
def collated(database: Database, request: pytest.FixtureRequest) -> Database:
    """`database`; on PostgreSQL one whose default collation is ICU's, not "C"."""
    if not isinstance(database, str):
        return database
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    name = f"icu_{request.node.name.split('[')[0][-20:]}"
    with cluster.connect() as conn:
        conn.execute(
            f'CREATE DATABASE "{name}" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE "en-US"'
            ' LOCALE "C.utf8"'
        )
    request.addfinalizer(lambda: cluster.drop_database(name))
    return cluster.url(name)


def test_kv_upserts_and_reads_a_prefix_by_bytes(collated: Database) -> None:
    store = Store(collated)
    for key in KEYS:
        store.set_kv(key, "old")
        store.set_kv(key, key)
    assert count(store, "kv") == len(KEYS)
    assert store.kv_prefixed("p:") == {k[2:]: k for k in KEYS if k.startswith("p:")}
    assert store.kv_prefixed("p") == {k[1:]: k for k in KEYS if k.startswith("p")}
    store.delete_kv("p:a")
    assert store.get_kv("p:a") is None and store.get_kv("P:x") == "P:x"
    store.close()


def test_health_is_one_row_per_channel(store: Store) -> None:
    store.set_health("slack", "down", "no socket")
    store.set_health("slack", "up")
    assert [(c, s, d) for c, s, d, _ in store.health()] == [("slack", "up", "")]


def test_a_conversation_is_one_row_and_keeps_its_target(store: Store) -> None:
    store.agents.save_conversation(
        "coordinator", "c1", [{"role": "user", "content": "a"}], "terminal"
    )
    store.agents.save_conversation("coordinator", "c1", [{"role": "user", "content": "b"}], None)
    assert store.agents.load_conversation("coordinator", "c1") == (
        [{"role": "user", "content": "b"}],
        "terminal",
    )
    assert count(store, "conversations") == 1


def test_a_worker_is_one_row(store: Store) -> None:
    row = WorkerRow("w1", "Wes", "task", "running", None, None, created_at=5.0)
    store.agents.upsert_worker(row)
    row.status, row.turns = "done", 3
    store.agents.upsert_worker(row)
    [again] = store.agents.workers()
    assert (again.status, again.turns, again.created_at) == ("done", 3, 5.0)
    assert store.views.worker_counts() == {"done": 1}


def test_a_question_added_again_is_open_with_no_answer(store: Store) -> None:
    q = QuestionRow("q1", "w1", "which?", "terminal", None, ["r1"], "open", 1.0)
    store.agents.add_question(q)
    store.agents.close_question("q1", "answered", "that one")
    store.agents.add_question(q)
    assert store.agents.open_questions() == [q]
    row = store.execute("SELECT answer, answered_at FROM questions").fetchall()
    assert [tuple(r) for r in row] == [(None, None)]


def test_an_approval_is_decided_once_and_runs_once(store: Store) -> None:
    row = ApprovalRow("a1", "coordinator", "c", "Coordinator", "shell", {}, "tu1", "terminal")
    store.approvals.add(row)
    store.approvals.add(row)
    assert count(store, "approvals") == 1
    assert store.approvals.decide("a1", True, "ann", None) is True
    assert store.approvals.decide("a1", False, "bob", "no") is False
    assert store.approvals.start("a1") is True
    assert store.approvals.start("a1") is False
    got = store.approvals.get("a1")
    assert got is not None and (got.status, got.decided_by) == ("running", "ann")


def test_the_audit_log_refuses_update_and_delete(store: Store) -> None:
    store.audit.add({"at": 1.0, "type": "tool", "agent": "coordinator"})
    for sql in ("UPDATE audit SET agent = 'x'", "DELETE FROM audit"):
        with pytest.raises(Conflict, match="append-only"):
            store.execute(sql)
    [line] = store.audit.since(0)
    assert (line.seq, line.agent) == (1, "coordinator")


def test_a_trigger_fire_key_is_claimed_once(store: Store) -> None:
    assert store.triggers.claim("t1", "2026-01-01T00:00", "fired") is True
    assert store.triggers.claim("t1", "2026-01-01T00:00", "missed") is False
    assert store.triggers.claim("t2", "2026-01-01T00:00", "missed") is True
    assert store.triggers.outcomes("t1") == ["fired"]
    assert {k: v.missed for k, v in store.triggers.run_stats().items()} == {"t2": 1}


def usage(at: float, tokens: int, cost: float | None) -> UsageRow:
    return UsageRow(at, "coordinator", "turn", None, "m", "ok", tokens, 1, 0, 0, cost, 0.5)


def test_usage_sums_keep_ints_ints_and_floats_floats(store: Store) -> None:
    assert type(store.usage.total(0).cost_usd) is float
    store.usage.record(usage(10.0, 100, None))
    unpriced = store.usage.total(0)
    assert (unpriced.unpriced, unpriced.cost_usd) == (1, 0.0) and type(unpriced.cost_usd) is float
    store.usage.record(usage(11.0, 250, 0.25))
    [total] = store.usage.by_agent(0)
    assert (total.calls, total.input_tokens, total.unpriced, total.cost_usd) == (2, 350, 1, 0.25)
    assert all(type(getattr(total, f)) is int for f in ("calls", "input_tokens", "unpriced"))
    assert type(total.cost_usd) is float and total.tokens == 352


def test_hourly_buckets_keep_a_time_in_its_hour(store: Store) -> None:
    end = 1000 * HOUR - 0.3  # hh:59:59.7
    store.usage.record(usage(end, 1, 0.5))
    store.usage.record(usage(end + 0.3, 1, None))
    msg = inbound("late")
    msg.received_at = end
    store.journal(msg)
    assert store.views.usage_per_hour(0, 2000 * HOUR) == {999: (1, 0.5), 1000: (1, 0.0)}
    assert store.views.inbound_per_hour(0, 2000 * HOUR) == {(999, "terminal"): 1}


def test_a_corrupt_row_is_quarantined_not_fatal(store: Store) -> None:
    problems: list[str] = []
    store._report = problems.append
    store.execute(
        "INSERT INTO workers (id, name, task, status, turns, state, created_at, updated_at)"
        " VALUES ('bad', 'B', 't', 'parked', 0, '{broken', 0, 0)"
    )
    store.agents.upsert_worker(WorkerRow("good", "G", "t", "running", None, None))
    store.outbox.set_attempt("o1", AttemptRow("0", "posted", {}, 1.0))
    store.execute("UPDATE attempts SET state = 'odd'")
    assert [w.id for w in store.agents.workers()] == ["good"]
    assert store.outbox.attempts("o1") == [AttemptRow("0", "trying", {}, 0.0)]
    quarantined = store.execute("SELECT source, row_key FROM quarantine ORDER BY id").fetchall()
    assert [tuple(r) for r in quarantined] == [("workers", "bad"), ("attempts", "1")]
    assert store.views.worker_counts() == {"corrupt": 1, "running": 1}
    assert len(problems) == 2 and problems[0].startswith("workers row bad: JSONDecodeError")


def test_tx_rolls_back_whole_and_a_savepoint_alone(store: Store) -> None:
    with pytest.raises(RuntimeError), store.tx():
        store.set_kv("a", "1")
        raise RuntimeError
    assert store.get_kv("a") is None
    with store.tx():
        store.set_kv("b", "1")
        with pytest.raises(Conflict), store.savepoint():
            store.set_kv("c", "1")
            store.execute("INSERT INTO kv (key, value) VALUES ('b', '2')")
        with store.tx():  # nests
            store.set_kv("d", "1")
    assert store.kv_prefixed("") == {"b": "1", "d": "1"}


def stored_version(store: Store) -> int:
    if store.postgres:
        return int(store.execute("SELECT version FROM schema_version").fetchone()[0])
    return migrations.version(store.db)


def set_version(store: Store, version: int) -> None:
    if store.postgres:
        store.execute("UPDATE schema_version SET version = ?", (version,))
    else:
        store.execute(f"PRAGMA user_version = {version}")


def test_the_schema_version_is_set_and_a_newer_one_refused_in_one_line(
    database: Database,
) -> None:
    store = Store(database)
    assert stored_version(store) == VERSION
    set_version(store, VERSION + 1)
    store.close()
    with pytest.raises(SchemaTooNew) as info:
        Store(database)
    line = str(info.value)
    assert "\n" not in line and f"version {VERSION + 1}" in line
    assert f"up to version {VERSION}" in line
    with pytest.raises(SchemaTooNew):
        Store(database, readonly=True)  # `switchboard status` too


def noop() -> None:
    """The jobs' function (a module-level reference: the job's state is pickled)."""


def job(scheduler: BlockingScheduler, job_id: str, when: datetime) -> Job:
    return Job(
        scheduler, id=job_id, func=noop, trigger=DateTrigger(when), executor="default",
        args=(), kwargs={}, name=job_id, misfire_grace_time=1, coalesce=True,
        max_instances=1, next_run_time=when,
    )  # fmt: skip


def test_the_job_store_adds_updates_removes_and_finds_due_jobs(database: Database) -> None:
    Store(database).close()  # the bot's schema, beside which the job table lives
    scheduler = BlockingScheduler(timezone=UTC)
    jobs = BatchedJobStore(database)
    jobs.start(scheduler, "default")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    jobs.add_job(job(scheduler, "a", now - timedelta(seconds=1)))
    jobs.add_job(job(scheduler, "b", now + timedelta(hours=1)))
    with pytest.raises(ConflictingIdError):
        jobs.add_job(job(scheduler, "a", now))
    assert [j.id for j in jobs.get_due_jobs(now)] == ["a"]
    later = jobs.lookup_job("b")
    assert later is not None and later.next_run_time == now + timedelta(hours=1)
    later.next_run_time = now - timedelta(seconds=2)
    jobs.update_job(later)
    jobs.remove_job("a")
    assert [j.id for j in jobs.get_due_jobs(now)] == ["b"]
    assert jobs.get_next_run_time() == now - timedelta(seconds=2)
    jobs.shutdown()
    again = BatchedJobStore(database)
    again.start(scheduler, "default")
    assert [j.id for j in again.get_all_jobs()] == ["b"]
    store = Store(database)
    assert store.triggers.job_ids() == {"b"}
    again.remove_all_jobs()
    assert store.triggers.next_run_times() == {}
    again.shutdown()
    store.close()


def test_a_missing_table_reads_as_nothing_and_raises_missing_table(store: Store) -> None:
    assert store.triggers.job_ids() == set()  # the job store has not made its table yet
    assert store.triggers.next_run_times() == {}
    with pytest.raises(MissingTable):
        store.execute("SELECT * FROM no_such_table")
    with pytest.raises(MissingTable):
        store.execute("SELECT no_such_column FROM kv")


def test_the_outbox_lifecycle_and_the_operator_views(store: Store) -> None:
    msgs = [Outbound("coordinator", Target("slack", "C1"), f"m{i}") for i in range(3)]
    for msg in msgs:
        store.outbox.enqueue(msg)
    seqs = [seq for seq, _ in store.outbox.new_outbox_rows(0, 10)]
    store.outbox.set_attempt(msgs[0].id, AttemptRow("0", "posted", {}, 1.0))
    store.outbox.outbox_sent(seqs[0], {"ts": "1.1"})
    store.outbox.outbox_retry(seqs[1], 0.0, "503")
    store.outbox.outbox_failed(seqs[2], "gone")
    assert store.outbox.attempts(msgs[0].id) == []  # dropped with the delivered row
    assert store.outbox.outbox_counts() == {"sent": 1, "pending": 1, "failed": 1}
    assert store.outbox.pending_outbox("slack:C1", 10)[0].attempts == 1
    assert store.views.outbox_pending()[0] == store.outbox.outbox_pending_count("slack:C1") == 1
    [(_, sent)] = store.outbox.sent_to(["slack:C1", "terminal"], 0, 10)
    assert sent.text == "m0" and [m.text for _, m in store.outbox.sent_between(0, 2e9)] == ["m0"]
    said = store.views.said_to("slack:C1", 0, 10)
    assert [(status, m.text) for status, m in said] == [
        ("sent", "m0"), ("pending", "m1"), ("failed", "m2"),
    ]  # fmt: skip
    for name, status, at in (("a", "done", 3.0), ("b", "parked", 1.0), ("c", "running", 2.0)):
        store.agents.upsert_worker(WorkerRow(name, name, "t", status, None, None))
        store.execute("UPDATE workers SET updated_at = ? WHERE id = ?", (at, name))
    assert [w.id for w in store.views.workers_page(0, 10)] == ["c", "b", "a"]
    assert [w.id for w in store.views.workers_page(1, 1)] == ["b"]
    messages = [{"role": "user", "content": "é"}]
    store.agents.save_conversation("coordinator", "k", messages, None)
    [info] = store.views.conversations_page(0, 10)
    size = sum(len(json.dumps(m)) for m in messages)  # each message a row
    assert (info.key, info.size, store.views.conversation_count()) == ("k", size, 1)


def test_the_journal_read_by_time_and_channel(store: Store) -> None:
    for n, channel in enumerate(("terminal", "slack", "terminal")):
        msg = inbound(f"t{n}", channel=channel)
        msg.received_at = 100.0 + n
        store.journal(msg)
    assert [m.text for m in store.recent_inbound("terminal", 0, 200, 1)] == ["t2"]
    assert [m.text for m in store.inbound_between(100.5, 102)] == ["t1"]
    assert store.views.inbound_message("slack", store.inbound_between(101, 102)[0].message_id)
    first = store.pending_inbound()[0][0]
    store.mark_inbound(first, "routed")
    assert [m.text for _, m in store.pending_inbound()] == ["t1", "t2"]


def test_the_store_speaks_sql_both_backends_run() -> None:
    """SQLite-only forms (`INSERT OR IGNORE`/`REPLACE`) are not translated for PostgreSQL:
    the store writes `ON CONFLICT` instead."""
    sources = [*Path(store_core.__file__).parent.glob("*.py"), Path(jobstore.__file__)]
    found = [p.name for p in sources if re.search(r"[\"']INSERT\s+OR\s", p.read_text())]
    assert found == [], f"SQLite-only INSERT OR ... in {found}: write ON CONFLICT"


def test_a_channels_recent_journal_is_read_by_its_time_window_not_every_row_of_it(
    tmp_path: Path,
) -> None:
    """Months of one channel kind's messages (issue 33): the Discord catch-up and the
    email channel read a window of them; SQLite, without statistics, walked the (channel,
    message_id) index over every row of the kind (2.6 s at a million rows)."""
    store = Store(tmp_path / "switchboard.db")
    ran: list[str] = []
    store.db.raw.set_trace_callback(ran.append)  # type: ignore[union-attr]
    store.recent_inbound("slack", 100.0, 200.0, 50)
    [sql] = [s for s in ran if "FROM inbound" in s]
    plan = " ".join(row[3] for row in store.execute("EXPLAIN QUERY PLAN " + sql))
    assert "inbound_received" in plan, plan
    assert "autoindex" not in plan and "TEMP B-TREE FOR ORDER BY" not in plan, plan
