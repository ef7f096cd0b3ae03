"""Several nodes on one PostgreSQL database (bot/leadership.py, bot/store/lease.py): one
leads, a follower journals and wakes it, a stopped or cut-off leader is replaced and
fenced, and `/healthz` says who leads. In one process, each node an `App` of its own;
tests/store/test_chaos_nodes.py runs them as processes and kills the leader."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from bot.app import App
from bot.ledger.report import full_status
from bot.ops.health import LLMHealth, health
from bot.store import migrations
from bot.store.core import Store
from bot.store.errors import Fenced
from bot.store.lease import Lost
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, eventually, inbound, make_settings, node, running_app
from tests.kits.pgcluster import PgCluster
from tests.kits.script import TeamScript
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings


async def a_leads_b_follows(
    tmp_path: Path, fake: FakeAnthropic, url: str
) -> tuple[tuple[App, Recorder], tuple[App, Recorder]]:
    """Node a, once it leads, and node b beside it."""
    a = await node(tmp_path, fake, url, "a")
    await eventually(lambda: a[0].node.role == "leader")
    return a, await node(tmp_path, fake, url, "b")


async def test_one_node_leads_and_a_follower_wakes_it_with_what_it_journals(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    fake.responder = TeamScript()
    (a, rec_a), (b, _) = await a_leads_b_follows(tmp_path, fake, pg_url)
    try:
        assert b.node.role == "follower" and b.node.to_json()["leader"] == "a"
        assert b.human.accept(inbound("hello from b's channel", conversation="c1"))
        # the same platform message taken in by both nodes (Slack redelivers it to
        # another connection when an ack is late): journaled once, answered once
        assert b.human.accept(inbound("twice", conversation="c2", message_id="dup"))
        assert not a.human.accept(inbound("twice", conversation="c2", message_id="dup"))
        assert not b.human.accept(inbound("twice", conversation="c2", message_id="dup"))
        await rec_a.wait_text("hello from b's channel")
        await rec_a.wait_text("twice")
    finally:
        await b.stop()
        await a.stop()
    assert len(rec_a.sent) == 2


async def test_a_stopped_leader_hands_over_and_the_parked_worker_carries_on(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    script = TeamScript()
    fake.responder = script
    (a, rec_a), (b, rec_b) = await a_leads_b_follows(tmp_path, fake, pg_url)
    try:
        a.human.accept(inbound("research please", conversation="c1"))
        await rec_a.wait_kind("question")
        await a.stop()  # releases the lease: b leads at its next beat
        await eventually(lambda: b.node.role == "leader", timeout=5)
        assert b.node.to_json() == {
            "id": "b", "role": "leader", "leader": "b", "since": b.node.leader().since
        }  # fmt: skip
        b.human.accept(inbound("Consumer", conversation="c1"))
        await rec_b.wait_text("Report based on: Consumer")
    finally:
        await b.stop()
    assert script.answers_seen == ["Consumer"]
    assert not any(m.kind == "question" for m in rec_b.sent), "the question was asked again"


async def test_a_leader_cut_off_from_the_database_is_fenced_and_another_leads(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str, pg_cluster: PgCluster
) -> None:
    fake.responder = TeamScript()
    (a, _), (b, rec_b) = await a_leads_b_follows(tmp_path, fake, pg_url)
    try:
        pid = a.store.db.raw.info.backend_pid
        assert pg_cluster.terminate(pid)  # the server ends the leader's session
        await eventually(lambda: b.node.role == "leader", timeout=5)
        await eventually(lambda: a.node.role == "follower", timeout=5)
        with pytest.raises(Fenced, match="fenced"):
            a.store.set_kv("stale", "write")  # a stale leader's writes are refused
        assert b.node.leader().generation == 2
        b.human.accept(inbound("after the failover", conversation="c2"))
        await rec_b.wait_text("after the failover")
    finally:
        await b.stop()
        await a.stop()


async def test_healthz_and_status_say_which_node_leads_and_since_when(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.responder = TeamScript()
    (a, _), (b, _) = await a_leads_b_follows(tmp_path, fake, pg_url)
    try:
        code, body = health(b.ops.view, LLMHealth())
        assert body["node"]["id"] == "b" and body["node"]["role"] == "follower"
        assert body["node"]["leader"] == "a" and body["node"]["since"] > 0
        assert code == 200, body  # a follower runs no scheduler and is healthy
        _, body = health(a.ops.view, LLMHealth())
        assert body["node"] == {**body["node"], "role": "leader", "leader": "a"}
        text = full_status(b.store, lambda node: node == "b")
        assert "leader: a, since " in text and "(this node)" not in text
        assert "leader: a (this node)" in full_status(a.store, lambda node: node == "a")
        metrics = a.ops.metrics.render().decode()
        assert 'switchboard_leader{node="a"} 1.0' in metrics
        assert 'switchboard_leader{node="b"} 0.0' in b.ops.metrics.render().decode()
    finally:
        await b.stop()
        await a.stop()


async def test_a_single_sqlite_process_leads_itself(tmp_path: Path, fake: FakeAnthropic) -> None:
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_NODE_ID="solo")
    async with running_app(settings) as app:
        _, body = health(app.ops.view, LLMHealth())
        assert body["node"]["id"] == "solo" and body["node"]["role"] == "leader"
        assert body["node"]["leader"] == "solo"
        await eventually(lambda: "leader: solo, since" in full_status(app.store))


async def test_a_node_stops_acting_when_a_newer_version_migrates_the_database(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    fake.responder = TeamScript()
    a, _ = await node(tmp_path, fake, pg_url, "a")
    await eventually(lambda: a.node.role == "leader")
    newer = migrations.VERSION + 1
    try:
        a.store.execute("UPDATE schema_version SET version = ?", (newer,))
        await eventually(lambda: a.node.lost is not None, timeout=5)
        assert f"schema version {newer}" in (a.node.lost or "")
        with pytest.raises(migrations.SchemaTooNew, match=f"version {newer}.*up to version"):
            Store(pg_url)
    finally:
        await a.stop()


async def test_an_approval_clicked_on_a_follower_runs_the_call_once_on_the_leader(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    entry = stdio_entry("ops", calls_file, approval=["restart_*"])
    apps = []
    for name in ("a", "b"):
        settings = tools_settings(tmp_path, fake, [entry], SWITCHBOARD_DATABASE_URL=pg_url,
                                  SWITCHBOARD_NODE_ID=name)  # fmt: skip
        app = App(settings, [])
        app.build()
        rec = Recorder()
        app.add_channel(rec)
        await app.start()
        apps.append((app, rec))
        await eventually(lambda: apps[0][0].node.role == "leader")
    (a, rec_a), (b, _) = apps
    try:
        await a.mcp.wait_connected(30)
        a.human.accept(inbound('call ops__restart_service {"service": "api"}'))
        await rec_a.wait_text("Approval needed", 30)
        (pending,) = b.store.approvals.pending()
        # a button clicked on the follower's connection: recorded there, heard by the leader
        decided = b.human.approvals.decide(pending.id, True, "ann", None, how="button")
        assert decided == "decided"
        await rec_a.wait_text("result: api restarted", 30)
        assert len(calls(calls_file, "restart_service")) == 1
    finally:
        await b.stop()
        await a.stop()


async def test_a_node_that_fails_to_start_leading_lets_go_and_starts_over(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str, pg_cluster: PgCluster
) -> None:
    fake.responder = TeamScript()
    (a, _), (b, _) = await a_leads_b_follows(tmp_path, fake, pg_url)
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:  # the database refuses
            conn.execute("ALTER TABLE workers RENAME TO workers_gone")  # what b restores
        await a.stop()
        await eventually(lambda: b.node.lost is not None, timeout=5)
        assert b.node.role == "follower" and not b.leading
        with pytest.raises(Fenced, match="fenced"):
            b.store.set_kv("half", "started")  # nothing more from a half-started leader
    finally:
        await b.stop()


async def test_a_leader_that_finds_itself_superseded_before_a_post_starts_over(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    fake.responder = TeamScript()
    (a, _), (b, _) = await a_leads_b_follows(tmp_path, fake, pg_url)
    restarts: list[str] = []
    a.node.restart = lambda: restarts.append("a")
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:  # another generation leads
            conn.execute("UPDATE leader SET generation = generation + 1")
        with pytest.raises(Lost):
            a.node.check()  # what the outbox asks before each post
        assert restarts == ["a"] and a.node.role == "follower" and a.node.lost
    finally:
        await b.stop()
        await a.stop()
