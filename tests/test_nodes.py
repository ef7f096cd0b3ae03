"""Several nodes on one PostgreSQL database (bot/nodes.py, bot/store/lease.py): one
leads, a follower journals and wakes it, a stopped or cut-off leader is replaced and
fenced, and `/healthz` says who leads. In one process, each node an `App` of its own;
tests/test_chaos_nodes.py runs them as processes and kills the leader."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from bot.app import App
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kit import Recorder, eventually, inbound, make_settings
from tests.pgcluster import PgCluster
from tests.script import TeamScript

TTL = "5"  # the default: a loop busy importing an SDK must not lose the lease


async def node(tmp_path: Path, fake: FakeAnthropic, url: str, name: str) -> tuple[App, Recorder]:
    settings = make_settings(
        tmp_path / "data",  # the data dir is shared by the nodes
        fake,
        SWITCHBOARD_DATABASE_URL=url,
        SWITCHBOARD_NODE_ID=name,
        SWITCHBOARD_LEADER_TTL_SECONDS=TTL,
    )
    app = App(settings, [])
    app.build()
    rec = Recorder()
    app.add_channel(rec)
    await app.start()
    return app, rec


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
        with pytest.raises(sqlite3.OperationalError, match="fenced"):
            a.store.set_kv("stale", "write")  # a stale leader's writes are refused
        assert b.node.leader().generation == 2
        b.human.accept(inbound("after the failover", conversation="c2"))
        await rec_b.wait_text("after the failover")
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
        with pytest.raises(sqlite3.OperationalError, match="fenced"):
            b.store.set_kv("half", "started")  # nothing more from a half-started leader
    finally:
        await b.stop()
