"""Two nodes on one PostgreSQL database: a hook POSTed to either node is journaled by
the node that takes it and handed over once, by the leader. The same delivery sent to
both nodes (a sender retrying on another node behind a load balancer) is one delivery:
the second node answers it 200 as a duplicate. A follower's delivery wakes the leader
(its announcement), so it does not wait for the leader's poll."""

from __future__ import annotations

import asyncio
import importlib
import time
from pathlib import Path

import pytest

from bot.ops.hooks_desk import POLL_SECONDS
from bot.ops.hooks_samples import workflow_run
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import eventually, node
from tests.kits.hooks_kit import analyst, send, toml
from tests.kits.slack_kit import free_port


@pytest.mark.slow
async def test_a_hook_posted_to_the_follower_or_the_leader_is_handled_once(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    fake.responder = analyst
    # the model SDK imported before the nodes run: on a loaded machine its import, on the
    # leader's first turn, can hold the loop past the lease's TTL (tests/kits/app_kit.py)
    importlib.import_module("anthropic")
    config = tmp_path / "switchboard.toml"
    hook = {"name": "ci", "kind": "github", "secret": "s3cret-for-hooks-tests-0123456789",
            "deliver_to": "terminal", "action": "Look at this github event."}  # fmt: skip
    config.write_text(toml([hook]))
    ports = free_port(), free_port()
    a, rec_a = await node(tmp_path, fake, pg_url, "a", SWITCHBOARD_CONFIG=str(config),
                          SWITCHBOARD_HTTP_PORT=str(ports[0]))  # fmt: skip
    await eventually(lambda: a.node.role == "leader")
    b, rec_b = await node(tmp_path, fake, pg_url, "b", SWITCHBOARD_CONFIG=str(config),
                          SWITCHBOARD_HTTP_PORT=str(ports[1]))  # fmt: skip
    leader, follower = (f"http://127.0.0.1:{p}" for p in ports)
    try:
        assert b.node.role == "follower"
        started = time.monotonic()
        assert (await send(follower, "ci", "github", workflow_run(), delivery="d-1"))[0] == 202
        again = await send(leader, "ci", "github", workflow_run(), delivery="d-1")
        assert again[0] == 200 and again[1]["duplicate"] is True
        await eventually(lambda: a.store.inbound_by_status("hook") == [], POLL_SECONDS)
        woken = time.monotonic() - started  # handed over by the leader
        assert (await send(leader, "ci", "github", workflow_run(), delivery="d-2"))[0] == 202
        again = await send(follower, "ci", "github", workflow_run(), delivery="d-2")
        assert again[0] == 200 and again[1]["duplicate"] is True
        await rec_a.wait_count(2, timeout=30)
        await asyncio.sleep(1.0)  # time for a second hand-over, were there one
    finally:
        await b.stop()
        await a.stop()
    assert woken < POLL_SECONDS / 2  # the follower's announcement woke the leader
    assert len(rec_a.sent) == 2 and rec_b.sent == [] and len(fake.calls) == 2
