"""Retention on both backends (the `database` fixture), by a clock moved 120 days on:
what has served its purpose goes, what something still waits on stays (a parked worker
from 120 days ago keeps its worker row, question, conversation and the journal of the
thread it asked in), and the audit log goes only by its own, longer, age."""

from __future__ import annotations

import json
import time

import pytest

from bot.core.messages import Outbound, Target
from bot.store.approvals import ApprovalRow
from bot.store.core import ParkedState, QuestionRow, Store, StoreError, WorkerRow
from bot.store.prune import Pruner, last_run
from bot.store.usage import UsageRow
from channels.discord.threads import Threads
from config.retention import DAY
from config.settings import SettingsError, load_settings
from tests.kits.app_kit import inbound

LATER = 120 * DAY  # how far the pruner's clock is ahead of the rows written now


def count(store: Store, table: str, where: str = "1 = 1") -> int:
    return int(store.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0])


def pruner(store: Store, batch: int = 7) -> Pruner:
    """90 days of retention, a year of audit, as seen 120 days from now."""
    now = time.time() + LATER
    return Pruner(store, 90 * DAY, 365 * DAY, batch=batch, clock=lambda: now)


def worker(store: Store, wid: str, status: str, conversation: str) -> None:
    parked = ParkedState("q-" + wid, "tu1") if status == "parked" else None
    store.agents.upsert_worker(
        WorkerRow(wid, wid, "task", status, conversation, "slack:C1", 1, parked)
    )  # type: ignore[arg-type]
    store.agents.save_conversation(wid, "task", [{"role": "user", "content": "go"}], "slack:C1")


def question(store: Store, wid: str, status: str, conversation: str) -> None:
    q = QuestionRow("q-" + wid, wid, "which?", "slack:C1", conversation, [], "open", time.time())
    store.agents.add_question(q)
    if status != "open":
        store.agents.close_question(q.id, status, "this")  # type: ignore[arg-type]


def test_old_handled_rows_go_and_what_is_waited_on_stays(store: Store) -> None:
    # a parked worker from 120 days ago, asking in slack:C1/parked
    worker(store, "parked1", "parked", "slack:C1/parked")
    question(store, "parked1", "open", "slack:C1/parked")
    store.journal(inbound("the ask", conversation="slack:C1/parked"), "routed")
    # a pending approval of the coordinator in another thread
    store.approvals.add(
        ApprovalRow("a1", "coordinator", "slack:C1/appr", "coordinator", "ops__x", {}, "tu", "t")
    )
    store.journal(inbound("please", conversation="slack:C1/appr"), "routed")
    store.agents.save_conversation("coordinator", "slack:C1/appr", [{"role": "user"}], "slack:C1")
    # what has served its purpose: 30 handled messages, a finished worker, sent replies
    for i in range(30):
        store.journal(inbound(f"old {i}", conversation=f"slack:C2/{i}"), "routed")
        store.agents.save_conversation(
            "coordinator", f"slack:C2/{i}", [{"role": "user"}], "slack:C2"
        )
    store.journal(inbound("not yet routed", conversation="slack:C2/x"))
    worker(store, "done1", "done", "slack:C2/1")
    question(store, "done1", "answered", "slack:C2/1")
    store.agents.keep_asker("done1", None)
    store.set_kv("asker:done1", "{}")
    for i in range(12):
        msg = Outbound("coordinator", Target("slack", "C2"), f"reply {i}")
        store.outbox.enqueue(msg)
    seqs = [r.seq for r in store.outbox.pending_outbox("slack:C2", 100)]
    for seq in seqs[:10]:
        store.outbox.outbox_sent(seq, {"ts": "1"})
    store.approvals.add(
        ApprovalRow(
            "a2",
            "coordinator",
            "slack:C2/3",
            "coordinator",
            "ops__x",
            {},
            "tu",
            "t",
            status="approved",
            settled=True,
        )
    )
    store.triggers.claim("t1", "k1", "fired")
    store.set_kv(f"slack.thread.C2/{time.time():.6f}", "1")
    for place in ("slack:C2/1", "slack:C1/parked"):  # a conversation pruned, one kept
        store.set_kv(f"people:speaker:{place}", "UANN")
        store.set_kv(f"people:in:slack:UANN\x1f{place}", "1")
    store.set_kv("prompt:parked1:task", "{}")
    store.set_kv("prompt:done1:task", "{}")
    store.set_kv(f"slack.thread.C3/{time.time() + 110 * DAY:.6f}", "1")
    # a recent message: 10 days old by the pruner's clock
    recent = store.journal(inbound("recent", conversation="slack:C3/1"), "routed")
    store.execute(
        "UPDATE inbound SET received_at = ? WHERE id = ?", (time.time() + 110 * DAY, recent)
    )

    run = pruner(store).run_now()

    assert run.removed["inbound"] == 30
    assert count(store, "inbound", "conversation = 'slack:C1/parked'") == 1
    assert count(store, "inbound", "conversation = 'slack:C1/appr'") == 1
    assert count(store, "inbound", "status = 'pending'") == 1
    assert count(store, "inbound", "conversation = 'slack:C3/1'") == 1
    # the parked worker keeps its row, question and conversation; the finished one goes
    assert [w.id for w in store.agents.workers()] == ["parked1"]
    assert [q.id for q in store.agents.open_questions()] == ["q-parked1"]
    assert store.agents.load_conversation("parked1", "task")[0]
    assert not store.agents.load_conversation("done1", "task")[0]
    assert store.get_kv("asker:done1") is None
    # the pending approval stays, with its conversation; the settled one goes
    assert [a.id for a in store.approvals.pending()] == ["a1"]
    assert store.approvals.get("a2") is None
    assert store.agents.load_conversation("coordinator", "slack:C1/appr")[0]
    assert count(store, "conversations", "agent = 'coordinator'") == 1
    # sent replies go, the two still pending stay
    assert store.outbox.outbox_counts() == {"pending": 2}
    assert count(store, "trigger_runs") == 0
    assert [k[:3] for k in store.kv_prefixed("slack.thread.")] == ["C3/"]  # the recent one
    assert list(store.kv_prefixed("prompt:")) == ["parked1:task"]
    # who spoke where: kept where the parked worker waits, gone where nothing does
    assert list(store.kv_prefixed("people:speaker:")) == ["slack:C1/parked"]
    assert list(store.kv_prefixed("people:in:")) == ["slack:UANN\x1fslack:C1/parked"]
    assert last_run(store) is not None and last_run(store).removed == run.removed  # type: ignore[union-attr]
    # a second run finds nothing more
    assert pruner(store).run_now().removed == {}


def test_usage_detail_becomes_daily_sums(store: Store) -> None:
    at = time.time()
    for i in range(20):
        cost = None if i % 5 == 0 else 0.5
        store.usage.record(
            UsageRow(at, "coordinator", "turn", None, "m", "ok", 10, 2, 1, 0, cost, 0.25)
        )
    pruner(store).run_now()
    assert count(store, "llm_usage") == 0
    row = store.execute(
        "SELECT calls, input_tokens, output_tokens, cache_read_tokens, cost_usd, unpriced,"
        " seconds FROM usage_daily"
    ).fetchall()
    assert [tuple(r) for r in row] == [(20, 200, 40, 20, 8.0, 4, 5.0)]


def test_the_audit_log_goes_only_by_its_own_age(store: Store) -> None:
    store.audit.add({"at": time.time(), "type": "tool.called", "agent": "coordinator"})
    store.audit.add({"at": time.time() - 300 * DAY, "type": "tool.called", "agent": "a"})
    pruner(store).run_now()  # the clock is 120 days on: only the 420-day-old line is over a year
    assert [line.agent for line in store.audit.since(0)] == ["coordinator"]
    # nothing younger than the horizon can be deleted, by the pruner or anyone else
    with pytest.raises(StoreError):
        store.execute("DELETE FROM audit")
    assert count(store, "audit") == 1


def test_pruning_goes_in_batches(store: Store) -> None:
    for i in range(50):
        store.journal(inbound(f"old {i}", conversation="slack:C2/1"), "routed")
    p = pruner(store, batch=7)
    batches = []
    step = dict(p.steps(p.clock()))["inbound"]
    while n := step():
        batches.append(n)
    assert batches == [7] * 7 + [1]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90", 90 * DAY), ("90d", 90 * DAY), ("12h", 12 * 3600.0), ("1.5", 1.5 * DAY)],
)
def test_retention_takes_days_or_a_duration(value: str, seconds: float) -> None:
    assert load_settings(environ={"SWITCHBOARD_RETENTION": value}).retention == seconds


@pytest.mark.parametrize("value", ["0", "-3", "-2d", "soon", "0h"])
@pytest.mark.parametrize("name", ["SWITCHBOARD_RETENTION", "SWITCHBOARD_AUDIT_RETENTION"])
def test_a_bad_retention_is_one_line_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(environ={name: value})
    text = str(err.value)
    assert text.startswith(name + ":") and "\n" not in text


def test_retention_defaults() -> None:
    s = load_settings(environ={})
    assert (s.retention, s.audit_retention) == (90 * DAY, 365 * DAY)


# -- the channels' catch-up watermarks and the "last spoke" marks -----------------------
def snowflake(at: float) -> str:
    return str((int(at * 1000) - 1_420_070_400_000) << 22)


def mark(store: Store, key: str, value: str) -> None:
    store.set_kv(key, json.dumps({"mark": value}))


def test_old_watermarks_and_last_spoke_marks_go(store: Store) -> None:
    p: Pruner = pruner(store)
    now = time.time()
    recent = now + LATER - DAY  # a day before the pruner's clock
    mark(store, "slack.watermark.Cold", f"{now:.6f}")
    mark(store, "slack.watermark.Warm", f"{recent:.6f}")
    mark(store, "slack.watermark.C1", f"{now:.6f}")  # a parked worker waits in C1/parked
    worker(store, "parked1", "parked", "slack:C1/parked")
    question(store, "parked1", "open", "slack:C1/parked")
    mark(store, "discord.watermark.111", snowflake(now))
    mark(store, "discord.watermark.222", snowflake(recent))
    mark(store, "slack.watermark.Bad", "not-a-ts")  # the channel quarantines it, kept
    store.set_kv("people:last:slack:UOLD", repr(now))
    store.set_kv("people:last:slack:UNEW", repr(recent))
    run = p.run_now()
    left = set(store.kv_prefixed("slack.watermark.")) | {
        "d" + k for k in store.kv_prefixed("discord.watermark.")
    }
    assert left == {"Warm", "C1", "Bad", "d222"}
    assert set(store.kv_prefixed("people:last:")) == {"slack:UNEW"}
    assert run.removed["watermarks"] == 3


def test_old_discord_threads_go_unless_their_conversation_lives(store: Store) -> None:
    now = time.time()
    recent = now + LATER - DAY
    old, busy, asking, new = (snowflake(now - i) for i in (3, 2, 1, 0))
    new = snowflake(recent)
    for thread in (old, busy, asking, new):
        store.set_kv(f"discord.thread:{thread}", "900")
    store.set_kv("discord.thread:not-a-snowflake", "900")  # does not decode: stays
    # someone still talks in `busy` (its conversation is not silent for the retention)
    store.agents.save_conversation("coordinator", f"discord:900/{busy}", [{"role": "user"}], "d")
    store.execute(
        "UPDATE conversations SET updated_at = ? WHERE key = ?", (recent, f"discord:900/{busy}")
    )
    # a worker parked 120 days ago asks in `asking`
    worker(store, "parked1", "parked", f"discord:900/{asking}")
    question(store, "parked1", "open", f"discord:900/{asking}")
    store.set_kv("discord.listening-since", repr(now))  # one row per platform: kept
    run = pruner(store).run_now()
    assert set(store.kv_prefixed("discord.thread:")) == {busy, asking, new, "not-a-snowflake"}
    assert run.removed["discord_threads"] == 1
    assert store.get_kv("discord.listening-since") == repr(now)


def test_the_discord_channel_forgets_a_pruned_thread_at_its_next_start(store: Store) -> None:
    threads = Threads(store)
    thread = snowflake(time.time())
    threads.join(thread, "900")
    assert Threads(store).is_ours(thread)
    pruner(store).run_now()
    assert not Threads(store).is_ours(thread)  # a follow-up needs a mention again


def test_orphaned_keys_are_listed_once_a_run_and_one_that_came_back_stays(store: Store) -> None:
    for i in range(20):
        store.set_kv(f"prompt:coordinator:slack:C9/{i}", "{}")  # their conversations are gone
        store.set_kv(f"people:speaker:slack:C9/{i}", "UANN")
    p = pruner(store, batch=7)
    step = dict(p.steps(p.clock()))["kv"]
    scans, deletes, run = [], [], store.execute

    def spy(sql: str, args: tuple[object, ...] = ()) -> object:
        scans.extend([sql] if sql.startswith("SELECT key FROM kv") else [])
        deletes.extend([sql] if sql.startswith("DELETE FROM kv") else [])
        return run(sql, args)

    store.execute = spy  # type: ignore[method-assign,assignment]
    assert step() == 7
    # two conversations come back while the run goes on: their rows are theirs again
    for place in ("slack:C9/18", "slack:C9/19"):
        store.agents.save_conversation("coordinator", place, [], "slack:C9")
    removed, n, steps = 7, 7, 1
    while n >= 7:  # as a run goes on: until a batch removes fewer than a batch
        removed, steps = removed + (n := step()), steps + 1
    assert removed == 36  # 40, less the two places' prompt and speaker rows
    # a statement per kind of check and chunk of 7, not per row: the write lock is held
    # from a batch's first statement to its commit
    assert len(deletes) <= 2 * steps < 36, deletes
    assert len(scans) == 5  # each prefix's keys listed at the first batch only, not at each
    assert set(store.kv_prefixed("prompt:")) == {
        "coordinator:slack:C9/18",
        "coordinator:slack:C9/19",
    }
    assert set(store.kv_prefixed("people:speaker:")) == {"slack:C9/18", "slack:C9/19"}


def test_who_spoke_where_stays_while_the_place_is_heard_or_waited_on(store: Store) -> None:
    """Each kind of per-place and per-worker row, and each reason it stays: a conversation
    kept, a message heard there in the last day, something waiting there, its worker."""
    heard, waits, gone = "slack:C7/heard", "slack:C7/waits", "slack:C7/gone"
    for place in (heard, waits, gone):
        store.set_kv(f"people:speaker:{place}", "UANN")
        store.set_kv(f"people:speaker-id:{place}", "slack:UANN")
        store.set_kv(f"people:in:slack:UANN\x1f{place}", "1")
    later = time.time() + LATER
    recent = store.journal(inbound("hello", conversation=heard), "routed")
    store.execute("UPDATE inbound SET received_at = ? WHERE id = ?", (later - 3600, recent))
    worker(store, "asks", "parked", waits)
    question(store, "asks", "open", waits)
    store.execute("DELETE FROM conversations")  # no conversation kept anywhere
    store.set_kv("worker-people:asks", "[]")
    store.set_kv("worker-people:ended", "[]")

    pruner(store).run_now()

    for prefix in ("people:speaker:", "people:speaker-id:"):
        assert set(store.kv_prefixed(prefix)) == {heard, waits}, prefix
    assert set(store.kv_prefixed("people:in:")) == {f"slack:UANN\x1f{p}" for p in (heard, waits)}
    assert list(store.kv_prefixed("worker-people:")) == ["asks"]
