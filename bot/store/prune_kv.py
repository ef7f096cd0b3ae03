"""The key/value rows pruning removes (bot/store/prune.py), one batch at a time: the
Slack and Discord threads the bot was in, begun before the retention; the per-conversation
and per-worker rows whose conversation or worker is gone (a prompt snapshot, who spoke
where, who asked a worker); the catch-up watermarks and "last spoke" marks gone stale.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # prune.py makes these batches
    from bot.store.prune import Pruned

#: the Slack threads the bot is in, one key each (channels/slack/threads.py)
THREADS = "slack.thread."
#: the Discord threads the bot is in, one key each (channels/discord/threads.py)
DISCORD_THREADS = "discord.thread:"


class KeyBatches:
    """One run's batches of key/value rows, on `store`, `batch` rows at a time; `needed`
    selects the conversations something still waits in (bot/store/prune.py)."""

    def __init__(self, store: Pruned, batch: int, needed: str) -> None:
        self.store = store
        self.batch = batch
        self.needed = needed

    def slack_threads(self, cutoff: float) -> int:
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

    def discord_threads(self, cutoff: float) -> int:
        """One batch of the Discord threads the bot was in (channels/discord/threads.py),
        begun before `cutoff` (a thread's id is a snowflake: its start), whose
        conversation is gone (silent for the retention) and where nothing waits: a
        follow-up there afterwards needs a mention again. An id that does not decode
        stays."""
        live = {k for (k,) in self.store.execute(
            "SELECT key FROM conversations WHERE agent = 'coordinator'"
            " AND key >= 'discord:' AND key < 'discord;'"
        )} | {c for (c,) in self.store.execute(self.needed)}  # fmt: skip
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

    def orphans(self, recent: float) -> int:
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
        places |= {c for (c,) in self.store.execute(self.needed)}  # something waits there
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

    def stale_marks(self, cutoff: float) -> int:
        """One batch of the catch-up watermarks (bot/inbox/watermarks.py) whose mark is
        older than `cutoff`, unless something still waits in their place, and of the
        "last spoke" marks (`people:last:`) older than `cutoff`: a place silent that long
        is read from the catch-up's window like a new one."""
        needed = [c for (c,) in self.store.execute(self.needed)]
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
