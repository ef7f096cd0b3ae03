"""Retention: what has served its purpose leaves the store, in small batches, off the hot
path (the leader's periodic `store-prune` job, bot/app.py; both backends), in a thread on
a connection of its own. One rule per table (docs/running-for-months.md lists them all).
Each batch is one short transaction of at most `batch` rows, so a message routed meanwhile
waits for one batch, never for the whole pruning. Nothing a parked worker, an open
question, a pending approval or a conversation still at work needs is removed: `_NEEDED`
names those conversations, and a worker is pruned only once it has ended.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from bot.store.prune_kv import KeyBatches
from bot.store.prune_usage import roll_up
from bot.store.sql import Sql

log = logging.getLogger(__name__)


class Pruned(Sql, Protocol):
    """What the pruner needs of the store: its SQL and its key/value rows."""

    def get_kv(self, key: str) -> str | None: ...

    def set_kv(self, key: str, value: str) -> None: ...

    def kv_prefixed(self, prefix: str) -> dict[str, str]: ...

    def close(self) -> None: ...


BATCH = 500
#: between two batches of the periodic run (its own thread): a writer of the store that
#: waited for a batch gets in (SQLite's busy handler sleeps 1, 2, 5, 10 ms ... between tries)
PAUSE_SECONDS = 0.02
#: ... and at least this many times as long as the batch took: the bot's writers wait for
#: each batch with the event loop, so while pruning runs they keep two thirds of the time
#: (at 65 messages a second, batches back to back held the loop often enough to double
#: the backlog at each run: docs/running-for-months.md, "The ceiling")
PACE = 2.0
#: rows a batch of the periodic run takes: each holds SQLite's write lock, and a writer of
#: the bot waits for it (500 rows held it 0.2-0.7 s on the loaded soak machine)
ASIDE_BATCH = 100
#: usage detail is kept at least this long, whatever SWITCHBOARD_RETENTION says: the
#: month's budget and the dashboard's month read the detail (bot/ledger/usage.py)
USAGE_FLOOR_SECONDS = 40 * 86_400.0
#: where the last run is recorded (`switchboard status`, the dashboard, /metrics)
LAST_KEY = "prune:last"
ENDED_WORKERS = "('done', 'failed', 'stopped', 'corrupt')"
#: the conversations something still waits in: a worker at work or parked, an open
#: question, an approval not yet settled
_NEEDED = (
    "SELECT origin_conversation FROM workers WHERE status IN ('running', 'parked')"
    " AND origin_conversation IS NOT NULL"
    " UNION SELECT conversation FROM questions WHERE status = 'open'"
    " AND conversation IS NOT NULL"
    " UNION SELECT conversation FROM approvals WHERE settled = 0"
)
_ACTIVE_IDS = "SELECT id FROM workers WHERE status IN ('running', 'parked')"

#: table -> one batch: `DELETE ... WHERE key IN (SELECT key ... LIMIT ?)` (no DELETE LIMIT
#: on either backend); every `?` but the last is the cutoff, the last the batch size
RULES: dict[str, str] = {
    # handled messages of people (routed, or quarantined: the quarantine holds them)
    "inbound": "DELETE FROM inbound WHERE id IN (SELECT id FROM inbound WHERE received_at < ?"
    f" AND status IN ('routed', 'corrupt') AND conversation NOT IN ({_NEEDED}) LIMIT ?)",
    # delivered (by when) or given up (by when queued); their attempt records went with
    # them (bot/store/outbox.py). Each half reads its own partial index.
    "outbox": "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE status = 'sent'"
    " AND sent_at < ? UNION ALL SELECT seq FROM outbox WHERE status IN ('failed', 'corrupt')"
    " AND created_at < ? LIMIT ?)",
    # attempt records whose message is no longer pending (a corrupt one kept aside)
    "attempts": "DELETE FROM attempts WHERE (outbox_id, part) IN (SELECT outbox_id, part"
    " FROM attempts WHERE at < ? AND outbox_id NOT IN"
    " (SELECT id FROM outbox WHERE status = 'pending') LIMIT ?)",
    # a coordinator's conversation silent for the whole retention, nothing waiting in it
    # (the next message there starts afresh; memory stays)
    "conversations": "DELETE FROM conversations WHERE (agent, key) IN (SELECT agent, key"
    " FROM conversations WHERE updated_at < ? AND agent = 'coordinator'"
    f" AND key NOT IN ({_NEEDED}) LIMIT ?)",
    # a worker's own conversation, once the worker ended long enough ago
    "worker_conversations": "DELETE FROM conversations WHERE (agent, key) IN"
    " (SELECT agent, key FROM conversations WHERE updated_at < ? AND agent IN"
    f" (SELECT id FROM workers WHERE status IN {ENDED_WORKERS}) LIMIT ?)",
    "questions": "DELETE FROM questions WHERE id IN (SELECT id FROM questions"
    " WHERE asked_at < ? AND status IN ('answered', 'cancelled', 'corrupt')"
    f" AND worker NOT IN ({_ACTIVE_IDS}) LIMIT ?)",
    "workers": "DELETE FROM workers WHERE id IN (SELECT id FROM workers WHERE updated_at < ?"
    f" AND status IN {ENDED_WORKERS} AND id NOT IN (SELECT agent FROM approvals"
    " WHERE settled = 0) AND id NOT IN (SELECT worker FROM questions WHERE status = 'open')"
    " LIMIT ?)",
    # decided and carried out (a late click on one gone is refused as unknown)
    "approvals": "DELETE FROM approvals WHERE id IN (SELECT id FROM approvals"
    " WHERE requested_at < ? AND settled = 1 LIMIT ?)",
    "trigger_runs": "DELETE FROM trigger_runs WHERE (trigger_id, fire_key) IN"
    " (SELECT trigger_id, fire_key FROM trigger_runs WHERE at < ? LIMIT ?)",
    "triggers": "DELETE FROM triggers WHERE id IN (SELECT id FROM triggers WHERE updated_at < ?"
    " AND status IN ('fired', 'missed', 'failed', 'cancelled', 'removed', 'corrupt') LIMIT ?)",
    "quarantine": "DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine WHERE at < ?"
    " LIMIT ?)",
}
#: the asker of a worker that no longer exists (bot/store/agents.py keep_asker)
_ORPHAN_ASKERS = (
    "DELETE FROM kv WHERE key >= 'asker:' AND key < 'asker;'"
    " AND substr(key, 7) NOT IN (SELECT id FROM workers)"
)


@dataclass(slots=True)
class PruneRun:
    """What one run removed, per table (and files), and when it ran."""

    at: float
    removed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    longest: float = 0.0  # seconds of the longest batch (a key/value rule's first: its scan too)
    checkpoint: float = 0.0  # seconds of what ran after it (SQLite: the WAL's checkpoint)
    cpu: float = 0.0  # seconds of CPU its thread used (of `seconds`, the rest is waiting)
    waited: float = 0.0  # the bot's longest wait for the write lock while the run ran
    waited_all: float = 0.0  # ... all its waits summed (its event loop waited with them)
    before_all: float = 0.0  # ... all its waits summed between the last run and this one

    def to_json(self) -> dict[str, object]:
        return {"at": self.at, "removed": self.removed, "seconds": round(self.seconds, 3),
                "longest": round(self.longest, 4), "checkpoint": round(self.checkpoint, 4),
                "cpu": round(self.cpu, 3), "waited": round(self.waited, 4),
                "waited_all": round(self.waited_all, 3),
                "before_all": round(self.before_all, 3)}  # fmt: skip


class Pruner:
    """Prunes one store by its retention settings (seconds), `clock` telling the time."""

    def __init__(
        self,
        store: Pruned,
        retention: float,
        audit_retention: float,
        *,
        batch: int = BATCH,
        clock: Callable[[], float] = time.time,
        files: Callable[[Pruned, float], int] | None = None,
    ) -> None:
        self.store = store
        self.retention = retention
        self.audit_retention = audit_retention
        self.batch = batch
        self.clock = clock
        #: removes the files older than a cutoff (events, archives: bot/store/growth.py)
        self.files = files
        #: folds the folders of workers gone before a cutoff (bot/store/prune_agents.py)
        self.folders: Callable[[Pruned, float], int] | None = None
        #: called after a run (the SQLite checkpoint: bot/store/growth.py)
        self.after: Callable[[], object] | None = None
        self.connect: Callable[[], Pruned] | None = None  # its own connection, for `run`
        self.pause = 0.0  # seconds between two batches
        #: the bot's store's waits for the write lock since the last call (Store.waited):
        #: the longest and their sum
        self.waits: Callable[[], tuple[float, float]] | None = None

    def steps(self, now: float) -> list[tuple[str, Callable[[], int]]]:
        """(name, one batch) of every rule; a batch returns how many rows it removed."""
        cutoff = now - self.retention
        out: list[tuple[str, Callable[[], int]]] = [
            (name, partial(self._delete, sql, cutoff)) for name, sql in RULES.items()
        ]
        usage_cutoff = now - max(self.retention, USAGE_FLOOR_SECONDS)
        out.append(("llm_usage", lambda: roll_up(self.store, usage_cutoff, self.batch)))
        out.append(("audit", lambda: self._audit(now - self.audit_retention)))
        keys = KeyBatches(self.store, self.batch, _NEEDED)
        out.append(("slack_threads", partial(keys.slack_threads, cutoff)))
        out.append(("discord_threads", partial(keys.discord_threads, cutoff)))
        out.append(("kv", partial(keys.orphans, now - 86_400)))
        out.append(("watermarks", partial(keys.stale_marks, cutoff)))
        return out

    def run_now(self) -> PruneRun:
        """Every rule to the end, on this store, in this thread (tests, maintenance)."""
        run, began, cpu = PruneRun(self.clock()), time.perf_counter(), time.thread_time()
        if self.waits is not None:
            run.before_all = self.waits()[1]
        for name, batch in self.steps(run.at):
            while True:
                t0 = time.perf_counter()
                n = batch()
                took = time.perf_counter() - t0
                run.longest = max(run.longest, took)
                if n > 0:
                    run.removed[name] = run.removed.get(name, 0) + n
                if n < self.batch:
                    break
                if self.pause:  # a writer the batch held gets in, and its share of the time
                    time.sleep(max(self.pause, PACE * took))
        self._finish(run, began, cpu)
        return run

    async def run(self) -> PruneRun:
        """The periodic job: every rule to the end in a thread, on a connection of its own
        (`connect`), pausing PAUSE_SECONDS between batches (SQLite's lock is not fair: a
        writer of the store sleeps while it waits); the event loop never runs a batch, a
        scan or the checkpoint. Without `connect`, on this store in this thread."""
        if self.connect is None:
            return self.run_now()
        return await asyncio.to_thread(self._aside)

    def _aside(self) -> PruneRun:
        store = self.connect()  # type: ignore[misc]  # run() checked it
        twin = Pruner(store, self.retention, self.audit_retention, clock=self.clock,
                      batch=min(self.batch, ASIDE_BATCH), files=self.files)  # fmt: skip
        twin.after, twin.pause, twin.folders = self.after, PAUSE_SECONDS, self.folders
        twin.waits = self.waits
        try:
            return twin.run_now()
        finally:
            store.close()

    def _finish(self, run: PruneRun, began: float, cpu: float) -> None:
        self.store.execute(_ORPHAN_ASKERS)
        if self.files is not None:
            if removed := self.files(self.store, run.at - self.retention):
                run.removed["files"] = removed
        if self.folders is not None:
            if folded := self.folders(self.store, run.at - self.retention):
                run.removed["worker_folders"] = folded
        if self.after is not None:
            t0 = time.perf_counter()
            self.after()
            run.checkpoint = time.perf_counter() - t0
        run.seconds, run.cpu = time.perf_counter() - began, time.thread_time() - cpu
        if self.waits is not None:
            run.waited, run.waited_all = self.waits()
        self.store.set_kv(LAST_KEY, json.dumps(run.to_json()))
        if run.removed:
            log.info("pruned %s in %.2f s, %.2f s of CPU (longest batch %.0f ms, checkpoint "
                     "%.0f ms; the bot waited for the write lock %.2f s in all, at most %.0f ms; "
                     "%.2f s since the last run)", run.removed, run.seconds, run.cpu,
                     run.longest * 1000, run.checkpoint * 1000, run.waited_all, run.waited * 1000,
                     run.before_all)  # fmt: skip

    def _delete(self, sql: str, cutoff: float) -> int:
        with self.store.tx():
            args = (cutoff,) * (sql.count("?") - 1) + (self.batch,)
            return max(self.store.execute(sql, args).rowcount, 0)

    def _audit(self, before: float) -> int:
        """Audit lines older than `before`: the horizon moves there (never back), then a
        batch below it goes. The table's trigger refuses any delete above the horizon."""
        with self.store.tx():
            self.store.execute(
                "UPDATE audit_horizon SET before = ? WHERE id = 1 AND before < ?", (before, before)
            )
            cur = self.store.execute(
                "DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < ?"
                " ORDER BY seq LIMIT ?)",
                (before, self.batch),
            )
            return max(cur.rowcount, 0)


def last_run(store: Pruned) -> PruneRun | None:
    """The last run recorded, None before the first."""
    raw = store.get_kv(LAST_KEY)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return PruneRun(float(data["at"]), dict(data["removed"]), float(data["seconds"]))
    except (ValueError, KeyError, TypeError):
        return None
