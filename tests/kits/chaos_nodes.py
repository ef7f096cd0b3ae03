"""The chaos harness's two-node mode: two `switchboard run` processes over ONE data dir
and ONE PostgreSQL database, both on the fake Slack; at each kill moment the current
LEADER is killed (SIGKILL) and started again a moment later, when it joins as a
follower. `Nodes` stands where tests/kits/chaos.py's `Bot` does (`run_chaos(..., bot=...)`):
the same workload, the same `Tally`.

Who leads is asked of each node's `/healthz` (`"node": {"role": ...}`): the `leader`
row keeps naming a dead leader until another takes the lease, a process does not.

Used by tests/store/test_chaos_nodes.py and tests/bench/bench_failover.py.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.slack_api import BOT_USER, FakeSlack
from tests.kits.chaos import TAG
from tests.kits.pgcluster import free_port
from tests.kits.proc import Run

NAMES = ("n1", "n2")
TTL = "2"  # a frozen leader is replaced within 2 s


class Node(Run):
    """One `switchboard run` process: its node id and its HTTP port (`/healthz`)."""

    def __init__(self, name: str, env: dict[str, str], workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        super().__init__(
            env | {"SWITCHBOARD_NODE_ID": name, "SWITCHBOARD_HTTP_PORT": str(self.port)}, workdir
        )

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.proc.send_signal(sig)

    async def health(self) -> dict[str, Any] | None:
        """Its `/healthz` JSON; None while it does not answer (down, starting over)."""
        if self.proc is None:
            return None
        url = f"http://127.0.0.1:{self.port}/healthz"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as session,
                session.get(url) as resp,
            ):
                body: dict[str, Any] = await resp.json()
                return body
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None

    async def role(self) -> str | None:
        body = await self.health()
        return body["node"]["role"] if body is not None else None

    async def until(self, role: str, timeout: float = 30.0) -> None:
        """Until it says it has `role` (leader, follower)."""
        end = time.monotonic() + timeout
        while await self.role() != role:
            assert time.monotonic() < end, f"{self.name} is not {role} after {timeout} s"
            await asyncio.sleep(0.05)


class Nodes:
    """The nodes of one bot, started, killed (the leader) and stopped together."""

    def __init__(
        self,
        env: dict[str, str],
        workdir: Path,
        names: tuple[str, ...] = NAMES,
        own: Mapping[str, dict[str, str]] | None = None,
    ) -> None:
        """`own`: more environment for some nodes, by name (a skewed clock: `faketime`)."""
        own = own or {}
        self.nodes = [Node(name, env | own.get(name, {}), workdir) for name in names]
        self.log: list[str] = []  # when each process started and was killed
        self.starts = 0

    def start(self) -> None:
        """Start every node that is down (at first all; after a kill, the killed one)."""
        for node in self.nodes:
            if node.proc is None:
                node.start()
                self.starts += 1
                self.log.append(f"{time.time():.3f} start {node.name} pid {node.pid}")

    async def leader(self, timeout: float = 30.0) -> Node:
        """The node that leads now, as it says itself."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for node in self.nodes:
                if await node.role() == "leader":
                    return node
            await asyncio.sleep(0.05)
        raise AssertionError(f"no node led within {timeout} s:\n" + "\n".join(self.log))

    async def up(self, slack: FakeSlack) -> tuple[Node, Node]:
        """(the leader, the other), once both have their Slack connection (two nodes)."""
        await slack.until(lambda s: s.open_sockets == len(self.nodes), 60)
        leader = await self.leader()
        other = next(n for n in self.nodes if n is not leader)
        await other.until("follower")
        return leader, other

    async def kill(self) -> Node:
        """SIGKILL the leader (once a node leads); the killed node."""
        node = await self.leader()
        self.log.append(f"{time.time():.3f} kill leader {node.name} pid {node.pid}")
        node.kill()
        return node

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def faketime(offset: str) -> dict[str, str]:
    """The environment that sets a process's wall clock `offset` ("+60s") off this host's
    (libfaketime, Debian's `faketime`); its monotonic clock, asyncio's, is left alone."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    assert found, "libfaketime is not installed (scripts/test installs `faketime`)"
    return {"LD_PRELOAD": str(found[0]), "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def mention(slack: FakeSlack, tag: str) -> str:
    """A person mentions the bot in C1 about `tag`; the post's ts."""
    return slack.post(f"<@{BOT_USER}> please look at {tag}", channel="C1")


def answers(slack: FakeSlack, tag: str) -> int:
    """How many of the bot's posts name `tag`."""
    return sum(tag in TAG.findall(str(p.get("text"))) for p in slack.messages)


def nodes_env(pg_url: str, ttl: str = TTL) -> dict[str, str]:
    return {"SWITCHBOARD_DATABASE_URL": pg_url, "SWITCHBOARD_LEADER_TTL_SECONDS": ttl}


def events(workdir: Path, kind: str) -> list[dict[str, object]]:
    """The data of the `kind` events in the data dir under `workdir`."""
    lines = (workdir / "data" / "events.jsonl").read_text().splitlines()
    return [e["data"] for e in map(json.loads, lines) if e["type"] == kind]
