"""Leadership among the nodes of one PostgreSQL database: who runs the agents.

The leader holds a session-level advisory lock (`pg_try_advisory_lock`) on the very
session its store writes through. That session is set to end on the server after
`0.9 ttl` seconds of silence (`idle_session_timeout`, `idle_in_transaction_session_timeout`),
and the leader speaks on it at least every `ttl / 4` (`beat`). A leader that dies, is
frozen (SIGSTOP) or is cut off from the database loses its session, so its lock, within
that, whatever any node's clock says: the server's own timers decide (a killed one at
once: its socket closes). A follower tries for the lock every `ttl / 10`, so it leads
within the TTL, and raises the generation in the `leader` row.

Fencing: a stale leader's writes cannot land, because they go through the session the
server ended, and a session that held the lock is never opened again (`Connection.hold`):
its connection is fenced instead (`Connection.fence`: every statement refused). And
`check()` (asked before every post to a platform) compares the generation it won with the
row's. The node then starts over as a follower (bot/leadership.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.store import migrations
from bot.store.errors import StoreError

if TYPE_CHECKING:
    from bot.store.postgres import Connection

log = logging.getLogger(__name__)

#: the advisory lock's key: one bot per database
LOCK_KEY = 0x5357_4C44
#: how often a follower tries for the lease, as a share of the TTL (and how much sooner
#: than the TTL a silent session ends)
FOLLOWER_SHARE = 0.1


@dataclass(slots=True)
class Leader:
    """Who leads (None: nobody yet), since when (server time, unix seconds), generation."""

    node: str | None
    since: float | None
    generation: int


class Lost(Exception):
    """This node led, and no longer does: nothing more may be written as the leader."""


class Lease:
    def __init__(self, db: Connection, node: str, ttl: float) -> None:
        self.db = db
        self.node = node
        self.ttl = ttl
        #: the generation this node won; None while it follows
        self.generation: int | None = None
        # a frozen leader's session ends this much before the TTL: the follower's next
        # try (every FOLLOWER_SHARE of it) takes the lock within the TTL
        millis = int(ttl * (1 - FOLLOWER_SHARE) * 1000)
        # on this session and on any opened again for it: a follower's session, lost and
        # opened anew, must still end when the node that may lead through it is frozen
        db.configure(f"SET idle_session_timeout = {millis}")
        db.configure(f"SET idle_in_transaction_session_timeout = {millis}")

    @property
    def leads(self) -> bool:
        return self.generation is not None

    @property
    def interval(self) -> float:
        """Seconds to the next beat: a leader speaks four times a TTL, a follower tries
        for the lease every FOLLOWER_SHARE of it."""
        return self.ttl / 4 if self.leads else self.ttl * FOLLOWER_SHARE

    def beat(self) -> bool:
        """Speak on the session; as a follower, try to lead. True when this node leads.
        Raises Lost when it led and lost the lease, or when a newer Switchboard has
        migrated the database meanwhile (the connection is fenced then)."""
        if self.generation is not None:
            self.check()
            self._same_schema()
            return True
        self._same_schema()
        row = self.db.execute("SELECT pg_try_advisory_lock(?)", (LOCK_KEY,)).fetchone()
        if not row[0]:
            return False
        self.generation = self._take()
        self.db.hold("the leader's lock")  # lost, it is not opened again: fenced
        log.warning("this node (%s) leads, generation %d", self.node, self.generation)
        return True

    def _take(self) -> int:
        row = self.db.execute(
            "UPDATE leader SET node = ?, generation = generation + 1,"
            " since = EXTRACT(EPOCH FROM clock_timestamp()) WHERE name = 'bot'"
            " RETURNING generation",
            (self.node,),
        ).fetchone()
        return int(row[0])

    def _same_schema(self) -> None:
        try:
            row = self.db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            migrations.check_postgres(self.db, int(row[0] or 0))
        except migrations.SchemaTooNew as exc:
            self._lose(str(exc))

    def check(self) -> None:
        """As the leader: still leading (the session lives, the generation is ours), else
        fence the connection and raise Lost. A follower passes."""
        if self.generation is None:
            return
        try:
            row = self.db.execute("SELECT generation FROM leader WHERE name = 'bot'").fetchone()
        except StoreError as exc:
            self._lose(f"the database session ended ({exc})")
        if row is None or int(row[0]) != self.generation:
            self._lose(f"generation {self.generation} was superseded")

    def _lose(self, why: str) -> None:
        self.abandon(why)
        raise Lost(why)

    def abandon(self, why: str) -> None:
        """Lead no more: the connection is fenced (its session, with the lock, ends with
        the process that starts over)."""
        self.db.fence(f"node {self.node} no longer leads: {why}")
        self.generation = None

    def release(self) -> None:
        """A clean stop: let another node lead at once, not after the TTL."""
        if self.generation is None:
            return
        self.generation = None
        self.db.hold(None)
        try:
            self.db.execute("SELECT pg_advisory_unlock(?)", (LOCK_KEY,))
        except StoreError:
            log.info("the lease went with the session")
