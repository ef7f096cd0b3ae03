"""Two nodes on one PostgreSQL database, as processes (tests/kits/chaos_nodes.py): the leader
killed at random moments under the chaos workload (tests/kits/chaos.py: 0 lost, 0
duplicated, 0 wrong thread, the worker's question once, its result once); a leader
frozen (SIGSTOP) past its lease is replaced and, resumed, acts no more; the database
stopped for a few seconds: what could not be journaled is not acked, and everything is
answered once when it is back.

Locally: `pytest tests/store/test_chaos_nodes.py --kills 10 --seed 1234 -s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.email.servers import Dovecot
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import Envelope, FakeSlack
from tests.kits.chaos import QUICK, chaos_world, respond, run_chaos
from tests.kits.chaos_nodes import TTL, Nodes, answers, events, mention, nodes_env
from tests.kits.pgcluster import PgCluster


@pytest.mark.chaos
async def test_killing_the_leader_of_two_nodes_loses_repeats_and_misroutes_nothing(
    tmp_path: Path,
    dovecot: Dovecot,
    fake: FakeAnthropic,
    pg_url: str,
    chaos_plan: tuple[int, int],
) -> None:
    kills, seed = chaos_plan
    async with chaos_world(dovecot, fake, tmp_path, seed, nodes_env(pg_url)) as world:
        nodes = Nodes(world.env, tmp_path)
        result = await run_chaos(world, seed, kills, messages=max(12, 3 * kills), bot=nodes)
    print(f"chaos, two nodes: seed={seed} kills={kills} {result.line()}")
    if not result.ok:
        print("\n".join(result.timeline))
    assert result.ok, f"seed={seed}: {result.line()}"
    assert nodes.starts == 2 + kills


@contextlib.contextmanager
def slack_nodes(
    fake: FakeAnthropic, pg_url: str, workdir: Path
) -> Iterator[tuple[FakeSlack, Nodes]]:
    """Two nodes on the fake Slack alone; the fake retries an unacked event after 1 s."""
    fake.responder = respond
    with FakeSlack() as slack:
        slack.retry_seconds = 1.0
        nodes = Nodes({**fake.env(), **slack.env(), **QUICK, **nodes_env(pg_url)}, workdir)
        nodes.start()
        try:
            yield slack, nodes
        finally:
            nodes.stop()


def envelopes(slack: FakeSlack, ts: str) -> list[Envelope]:
    """The events (app_mention and message) of the person's post `ts`."""
    return [e for e in list(slack.envelopes.values()) if e.body["event"].get("ts") == ts]


async def test_a_leader_frozen_past_its_lease_is_replaced_and_acts_no_more(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    with slack_nodes(fake, pg_url, tmp_path) as (slack, nodes):
        old, new = await nodes.up(slack)
        frozen_at = time.time()
        old.signal(signal.SIGSTOP)
        try:
            mention(slack, "t001")  # to either connection: the frozen one does not ack
            await new.until("leader", timeout=15)
            body = await new.health()
            assert body is not None
            took = body["node"]["since"] - frozen_at  # the database's clock: this host's
            assert took <= float(TTL) + 0.25, f"{new.name} led {took:.2f} s after the freeze"
            await slack.until(lambda s: answers(s, "t001") == 1, 30)
        finally:
            old.signal(signal.SIGCONT)
        await old.until("follower")  # started over (same pid), follows
        assert [e["node"] for e in events(tmp_path, "node.lost")] == [old.name]
        mention(slack, "t002")  # the bot still answers, and the old leader not twice
        await slack.until(lambda s: answers(s, "t002") == 1, 30)
        assert (answers(slack, "t001"), answers(slack, "t002")) == (1, 1)


async def test_the_database_stopped_a_while_acks_nothing_unjournaled_and_answers_once(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str, pg_cluster: PgCluster
) -> None:
    with slack_nodes(fake, pg_url, tmp_path) as (slack, nodes):
        await nodes.up(slack)
        pg_cluster.stop()
        try:
            sent = [
                e for tag in ("t001", "t002", "t003") for e in envelopes(slack, mention(slack, tag))
            ]
            await asyncio.sleep(3.0)  # the outage
            assert all(e.sent_at for e in sent) and not any(e.acked_at for e in sent)
        finally:
            pg_cluster.start()
        mention(slack, "t004")
        tags = ("t001", "t002", "t003", "t004")
        await slack.until(lambda s: all(answers(s, t) >= 1 for t in tags), 45)
        await nodes.up(slack)  # room for a late duplicate: both nodes back
        assert [answers(slack, t) for t in tags] == [1, 1, 1, 1]
