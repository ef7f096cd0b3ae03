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
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from bot.store.prune_usage import roll_up
from bot.store.sql import Sql

log = logging.getLogger(__name__)


class Pruned(Sql, Protocol):
    """What the pruner needs of the store: its SQL and its key/value rows."""

    def get_kv(self, key: str) -> str | None: ...

    def set_kv(self, key: str, value: str) -> None: ...

    def delete_kv(self, key: str) -> None: ...

    def kv_prefixed(self, prefix: str) -> dict[str, str]: ...

    def kv_keys(self, prefix: str) -> list[str]: ...

    def close(self) -> None: ...


BATCH = 500
#: between two batches of the periodic run (its own thread): a writer of the store that
#: waited for a batch gets in (SQLite's busy handler sleeps 1, 2, 5, 10 ms ... between tries)
PAUSE_SECONDS = 0.02
#: rows a batch of the periodic run takes: each holds SQLite's write lock, and a writer of
#: the bot waits for it (500 rows held it 0.2-0.7 s on the loaded soak machine)
ASIDE_BATCH = 100
#: usage detail is kept at least this long, whatever SWITCHBOARD_RETENTION says: the
#: month's budget and the dashboard's month read the detail (bot/ledger/usage.py)
USAGE_FLOOR_SECONDS = 40 * 86_400.0
#: where the last run is recorded (`switchboard status`, the dashboard, /metrics)
LAST_KEY = "prune:last"
#: the Slack threads the bot is in, one key each (channels/slack/threads.py)
THREADS = "slack.thread."
#: the Discord threads the bot is in, one key each (channels/discord/threads.py)
DISCORD_THREADS = "discord.thread:"
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
#: on either backend); the first `?` is the cutoff, the last the batch size
RULES: dict[str, str] = {
    # handled messages of people (routed, or quarantined: the quarantine holds them)
    "inbound": "DELETE FROM inbound WHERE id IN (SELECT id FROM inbound WHERE received_at < ?"
    f" AND status IN ('routed', 'corrupt') AND conversation NOT IN ({_NEEDED}) LIMIT ?)",
    # delivered or given up; their attempt records went with them (bot/store/outbox.py)
    "outbox": "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE created_at < ?"
    " AND status IN ('sent', 'failed', 'corrupt') LIMIT ?)",
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
    longest: float = 0.0  # seconds of the longest batch (or the checkpoint)

    def to_json(self) -> dict[str, object]:
        return {"at": self.at, "removed": self.removed, "seconds": round(self.seconds, 3),
                "longest": round(self.longest, 4)}  # fmt: skip


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

    def steps(self, now: float) -> list[tuple[str, Callable[[], int]]]:
        """(name, one batch) of every rule; a batch returns how many rows it removed."""
        cutoff = now - self.retention
        out: list[tuple[str, Callable[[], int]]] = [
            (name, partial(self._delete, sql, cutoff)) for name, sql in RULES.items()
        ]
        usage_cutoff = now - max(self.retention, USAGE_FLOOR_SECONDS)
        out.append(("llm_usage", lambda: roll_up(self.store, usage_cutoff, self.batch)))
        out.append(("audit", lambda: self._audit(now - self.audit_retention)))
        out.append(("slack_threads", partial(self._threads, cutoff)))
        out.append(("discord_threads", partial(self._discord_threads, cutoff)))
        out.append(("kv", partial(self._orphans, now - 86_400)))
        out.append(("watermarks", partial(self._stale_marks, cutoff)))
        return out

    def run_now(self) -> PruneRun:
        """Every rule to the end, on this store, in this thread (tests, maintenance)."""
        run, began = PruneRun(self.clock()), time.perf_counter()
        for name, batch in self.steps(run.at):
            while True:
                t0 = time.perf_counter()
                n = batch()
                run.longest = max(run.longest, time.perf_counter() - t0)
                if n > 0:
                    run.removed[name] = run.removed.get(name, 0) + n
                if n < self.batch:
                    break
                time.sleep(self.pause)  # a writer the batch held waits no longer
        self._finish(run, began)
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
        try:
            return twin.run_now()
        finally:
            store.close()

    def _finish(self, run: PruneRun, began: float) -> None:
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
            run.longest = max(run.longest, time.perf_counter() - t0)
        run.seconds = time.perf_counter() - began
        self.store.set_kv(LAST_KEY, json.dumps(run.to_json()))
        if run.removed:
            log.info("pruned %s in %.2f s (longest batch %.0f ms)", run.removed, run.seconds,
                     run.longest * 1000)  # fmt: skip

    def _delete(self, sql: str, cutoff: float) -> int:
        with self.store.tx():
            return max(self.store.execute(sql, (cutoff, self.batch)).rowcount, 0)

    def _threads(self, cutoff: float) -> int:
        """One batch of the Slack threads the bot was in (channels/slack/threads.py), begun
        before `cutoff` (the thread's ts is its start): a follow-up there after the
        retention needs a mention again."""
        old = []
        for (key,) in self.store.execute(
            "SELECT key FROM kv WHERE key >= ? AND key < ?", (THREADS, THREADS[:-1] + "/")
        ):
            try:
                if float(key.rpartition("/")[2]) < cutoff:
                    old.append(key)
            except ValueError:
                continue
            if len(old) >= self.batch:
                break
        return self._drop(old)

    def _discord_threads(self, cutoff: float) -> int:
        """One batch of the Discord threads the bot was in (channels/discord/threads.py),
        begun before `cutoff` (a thread's id is a snowflake: its start), whose
        conversation is gone (silent for the retention) and where nothing waits: a
        follow-up there afterwards needs a mention again. An id that does not decode
        stays."""
        live = {k for (k,) in self.store.execute(
            "SELECT key FROM conversations WHERE agent = 'coordinator'"
            " AND key >= 'discord:' AND key < 'discord;'"
        )} | {c for (c,) in self.store.execute(_NEEDED)}  # fmt: skip
        old = []
        for thread, parent in self.store.kv_prefixed(DISCORD_THREADS).items():
            try:
                begun = MARK_TIMES["discord"](thread)
            except ValueError:
                continue
            if begun < cutoff and f"discord:{parent}/{thread}" not in live:
                old.append(DISCORD_THREADS + thread)
            if len(old) >= self.batch:
                break
        return self._drop(old)

    def _orphans(self, recent: float) -> int:
        """One batch of the per-conversation and per-worker key/value rows whose
        conversation or worker is gone (a cached prompt, who spoke where, who asked a
        worker), and that nobody spoke in since `recent`: rewritten if it speaks again."""
        convs = {f"{a}:{k}" for a, k in self.store.execute("SELECT agent, key FROM conversations")}
        places = {k.partition(":")[2] for k in convs if k.startswith("coordinator:")}
        places |= {
            c for (c,) in self.store.execute(
                "SELECT DISTINCT conversation FROM inbound WHERE received_at >= ?", (recent,)
            )
        }  # fmt: skip
        places |= {c for (c,) in self.store.execute(_NEEDED)}  # something waits there
        workers = {w for (w,) in self.store.execute("SELECT id FROM workers")}
        live = {"prompt:": convs, "worker-people:": workers, "people:speaker:": places,
                "people:speaker-id:": places}  # fmt: skip
        gone: list[str] = []
        for prefix, kept in (*live.items(), ("people:in:", places)):
            for key in self.store.kv_keys(prefix):  # the keys alone: values stay unread
                owner = key.rpartition("\x1f")[2] if prefix == "people:in:" else key
                if owner not in kept:
                    gone.append(prefix + key)
                if len(gone) >= self.batch:
                    break
        return self._drop(gone)

    def _stale_marks(self, cutoff: float) -> int:
        """One batch of the catch-up watermarks (bot/inbox/watermarks.py) whose mark is
        older than `cutoff`, unless something still waits in their place, and of the
        "last spoke" marks (`people:last:`) older than `cutoff`: a place silent that long
        is read from the catch-up's window like a new one."""
        needed = [c for (c,) in self.store.execute(_NEEDED)]
        gone: list[str] = []
        for kind, when in MARK_TIMES.items():
            for place, raw in self.store.kv_prefixed(f"{kind}.watermark.").items():
                conv = f"{kind}:{place}"
                if any(n == conv or n.startswith(conv + "/") for n in needed):
                    continue
                if (at := _mark_time(raw, when)) is not None and at < cutoff:
                    gone.append(f"{kind}.watermark.{place}")
        for ident, raw in self.store.kv_prefixed("people:last:").items():
            if (at := _float(raw)) is not None and at < cutoff:
                gone.append("people:last:" + ident)
        return self._drop(gone)

    def _drop(self, keys: list[str]) -> int:
        """Deletes a batch of these key/value rows in one transaction; how many."""
        with self.store.tx():
            for key in keys[: self.batch]:
                self.store.delete_kv(key)
        return len(keys[: self.batch])

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


def _float(raw: str) -> float | None:
    with suppress(ValueError):
        return float(raw)
    return None


def _mark_time(raw: str, when: Callable[[str], float]) -> float | None:
    """A stored watermark's time; None when it does not decode (kept: the channel
    quarantines it and reads a bounded window)."""
    try:
        mark = str(json.loads(raw)["mark"])
        return when(mark) if mark else None
    except (ValueError, KeyError, TypeError):
        return None


#: a watermark's platform -> its mark's time: a Slack `ts` is epoch seconds, a Discord
#: snowflake carries milliseconds since the Discord epoch (2015) in its top bits
MARK_TIMES: dict[str, Callable[[str], float]] = {
    "slack": float,
    "discord": lambda m: ((int(m) >> 22) + 1_420_070_400_000) / 1000,
}


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
