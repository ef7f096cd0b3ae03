"""Several nodes, one bot: what a node runs as a follower and when it leads.

With SQLite (the embedded default) the one process leads from the start. On
PostgreSQL every node serves HTTP (`/healthz`, Slack's HTTP events) and runs the
channels that take events on every node (`EVERY_NODE`: Slack, whose Socket Mode spreads
events over the connections); it journals what it receives before the ack and announces
it. One node leads (bot/store/lease.py): it routes, runs the agents, the scheduler, the
outbox and the single-session channels (Discord's gateway, IMAP IDLE), woken by what
the followers announce (bot/store/listen.py). A leader that loses its lease acts no
more: its store is fenced, and the node starts over as a follower (`restart`: the
process execs itself anew, same pid, so nothing of the old leader's memory can act).

Part of the composition root.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from bot.core.tasks import cancel_all
from bot.store.errors import StoreError
from bot.store.lease import Leader, Lease, Lost

if TYPE_CHECKING:
    from bot.app import App
    from bot.store.listen import Listener

log = logging.getLogger(__name__)

#: channels every node runs; the others only the leader
EVERY_NODE = frozenset({"slack"})
#: set in the environment of a node that starts over: it waits for the database
REJOIN_VARIABLE = "SWITCHBOARD_REJOIN"
#: seconds this host's clock may be off the database's before the node says so
CLOCK_TOLERANCE = 5.0
Role = Literal["leader", "follower"]


def restart_process() -> None:
    """Start over as a follower: exec this process anew (same pid, a clean memory)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[REJOIN_VARIABLE] = "1"
    os.execv(sys.executable, sys.orig_argv)


class Node:
    def __init__(self, app: App, restart: Callable[[], None] | None = None) -> None:
        self.app = app
        self.id = app.settings.node
        self.role: Role = "follower"
        self.since = time.time()
        self.lease: Lease | None = None
        self.listener: Listener | None = None
        self.restart = restart
        #: why this node lost the lease it held (None: it did not): it writes no more
        self.lost: str | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """On PostgreSQL: one of possibly several nodes."""
        return self.app.store.postgres

    def runs(self, channel_kind: str) -> bool:
        """Whether this node runs that channel before it leads."""
        return self.shared and channel_kind in EVERY_NODE

    async def start(self) -> None:
        if not self.shared:
            await self._lead()
            return
        store = self.app.store
        self._check_clock()
        self.lease = Lease(store.db, self.id, self.app.settings.leader_ttl_seconds)
        store.announce = True
        self.app.human.routing = False
        if self.lease.beat():  # nobody leads: start as the leader, as on SQLite
            await self._lead()
        self._task = asyncio.create_task(self._campaign(), name="lease")

    def _check_clock(self) -> None:
        """Say so when this host's clock is off the database's: the lease does not depend
        on it, but the scheduler of the node that leads fires by its own clock."""
        offset = time.time() - self.app.store.now()
        if abs(offset) > CLOCK_TOLERANCE:
            log.warning(
                "node %s: this host's clock is %+.0f s off the database's; leadership does"
                " not depend on it, but schedules fire by the leading node's clock (use NTP)",
                self.id,
                offset,
            )
            self.app.events.emit("node.clock", "runtime", node=self.id, offset=round(offset, 1))

    async def _campaign(self) -> None:
        assert self.lease is not None
        while True:
            try:
                leads = self.lease.beat()
            except Lost as exc:
                self._lost(str(exc))
                return
            except StoreError as exc:  # a follower cut off from the database: retry
                log.warning("node %s cannot reach the database: %s", self.id, exc)
                leads = False
            if leads and self.role == "follower" and not await self._took_lead():
                return
            await asyncio.sleep(self.lease.interval)

    async def _took_lead(self) -> bool:
        """Start leading; a start that fails (the database, a part that raised) leaves no
        half-started leader: the lease is let go, fenced, and the node starts over."""
        try:
            await self._lead()
        except Exception as exc:
            log.exception("node %s could not start leading", self.id)
            assert self.lease is not None
            self.lease.abandon(f"starting to lead failed: {exc}")
            self._lost(f"starting to lead failed: {exc}")
            return False
        return True

    async def _lead(self) -> None:
        self.role = "leader"
        self.since = self.leader().since or time.time()
        store = self.app.store
        store.announce = False
        if self.shared:
            from bot.store.listen import Listener

            store.outbox.outbox_due_now()  # retry times another node's clock wrote
            self.listener = Listener(str(store.where), self._heard)
            self.listener.start(asyncio.get_running_loop())
        await self.app.lead()
        self.app.human.routing = True
        self.app.human.route_pending()  # what came in while the leader's parts started
        self.app.events.emit("node.leads", "runtime", node=self.id, role=self.role)

    def _heard(self, topic: str) -> None:
        """What a follower announced (bot/store/listen.py)."""
        human = self.app.human
        if topic in ("inbound", "all"):
            human.route_pending()
        if topic in ("outbox", "all"):
            human.outbox.wake()
        if topic.startswith("approval:"):
            human.approvals.heard(topic.removeprefix("approval:"))
        if topic in ("hook", "all") and self.app.ops.hooks is not None:
            self.app.ops.hooks.desk.heard()

    def _lost(self, why: str) -> None:
        log.critical("node %s lost the lease (%s): it acts no more, and starts over", self.id, why)
        self.app.events.emit("node.lost", "runtime", node=self.id, reason=why)
        self.role = "follower"
        self.lost = why
        self.app.leading = False
        if self.listener is not None:
            self.listener.stop()
        if self.restart is not None:
            self.restart()

    def check(self) -> None:
        """Before an act the leader alone may do (a post to a platform): raises Lost when
        this node no longer leads (and the node starts over, as when a beat finds it)."""
        if self.lease is None:
            return
        try:
            self.lease.check()
        except Lost as exc:
            self._lost(str(exc))
            raise

    def leader(self) -> Leader:
        """Who leads, as the database says (this node, on SQLite)."""
        if self.lease is None:
            return Leader(self.id, self.since, 0)
        try:
            return self.app.store.leader()
        except StoreError:
            return Leader(None, None, 0)

    def to_json(self) -> dict[str, Any]:
        """`/healthz`'s "node": this node, its role, who leads and since when."""
        leader = self.leader()
        return {"id": self.id, "role": self.role, "leader": leader.node, "since": leader.since}

    async def stop(self) -> None:
        """Campaign no more; the lease is kept until the leader's parts have stopped."""
        if self._task is not None:
            await cancel_all([self._task])
        if self.listener is not None:
            self.listener.stop()

    def release(self) -> None:
        """Let another node lead at once (a clean stop), not after the TTL."""
        if self.lease is not None:
            self.lease.release()
