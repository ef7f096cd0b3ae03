"""The key/value rows pruning removes (bot/store/prune.py), one batch at a time: the
Slack and Discord threads the bot was in, begun before the retention; the per-conversation
and per-worker rows whose conversation or worker is gone (a prompt snapshot, who spoke
where, who asked a worker); the catch-up watermarks and "last spoke" marks gone stale.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import suppress
from itertools import islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # prune.py makes these batches
    from bot.store.prune import Pruned

#: the Slack threads the bot is in, one key each (channels/slack/threads.py)
THREADS = "slack.thread."
#: the Discord threads the bot is in, one key each (channels/discord/threads.py)
DISCORD_THREADS = "discord.thread:"


#: a row to delete: its key, and a condition its delete checks (on the row, its
#: arguments after the key) that holds only while its owner is still gone
Gone = tuple[str, str, tuple[str, ...]]


class KeyBatches:
    """One run's batches of key/value rows, on `store`, `batch` rows at a time; `needed`
    selects the conversations something still waits in (bot/store/prune.py).

    Each rule lists what it removes once, at its first batch: a scan of the keys and of
    what is alive (at a busy team's scale ~60,000 conversations and ~200,000 keys; the
    orphans' set difference is the database's, the rest a few tenths of a second of
    Python). Then each batch deletes the next `batch` of them in one transaction. A row
    whose owner came back since the list was made stays: the delete of a per-conversation
    or per-worker row checks in the same statement, by its primary key, that its owner is
    still gone (a conversation something waits in is never pruned, so "no conversation"
    also says nothing waits there). Scanning again at every batch held the GIL and a
    read of the database for seconds a batch, back to back: at 85 routed messages a
    second the bot fell behind and the WAL, whose restart waits for the last reader,
    grew past 800 MB."""

    def __init__(self, store: Pruned, batch: int, needed: str) -> None:
        self.store = store
        self.batch = batch
        self.needed = needed
        self._lists: dict[str, Iterator[Gone]] = {}  # rule -> what it has still to delete

    def slack_threads(self, cutoff: float) -> int:
        """The Slack threads the bot was in (channels/slack/threads.py), begun before
        `cutoff` (the thread's ts is its start): a follow-up there after the retention
        needs a mention again."""
        return self._next("slack_threads", lambda: self._old_slack_threads(cutoff))

    def discord_threads(self, cutoff: float) -> int:
        """The Discord threads the bot was in (channels/discord/threads.py), begun before
        `cutoff` (a thread's id is a snowflake: its start), whose conversation is gone
        (silent for the retention) and where nothing waits: a follow-up there afterwards
        needs a mention again. An id that does not decode stays."""
        return self._next("discord_threads", lambda: self._old_discord_threads(cutoff))

    def orphans(self, recent: float) -> int:
        """The per-conversation and per-worker key/value rows whose conversation or worker
        is gone (a cached prompt, who spoke where, who asked a worker), and that nobody
        spoke in since `recent`: rewritten if it speaks again."""
        return self._next("kv", lambda: self._orphans(recent))

    def stale_marks(self, cutoff: float) -> int:
        """The catch-up watermarks (bot/inbox/watermarks.py) whose mark is older than
        `cutoff`, unless something still waits in their place, and the "last spoke" marks
        (`people:last:`) older than `cutoff`: a place silent that long is read from the
        catch-up's window like a new one."""
        return self._next("watermarks", lambda: self._stale_marks(cutoff))

    def _next(self, rule: str, find: Callable[[], list[Gone]]) -> int:
        """Deletes the next `batch` rows of what `find` listed at the rule's first batch
        (a listed row whose owner came back is passed over, and more are taken until
        `batch` went); how many went: fewer than a batch once the list is done.

        One statement per kind of check, not one per row: the write lock is held from the
        first statement to the commit, and in a busy bot each statement this thread
        makes may wait to take the GIL back (up to the 5 ms switch interval), while the
        bot's own writers wait for the lock: a hundred statements a batch could hold it
        for half a second."""
        if rule not in self._lists:
            self._lists[rule] = iter(find())
        removed = 0
        with self.store.tx():
            while removed < self.batch:
                chunk = list(islice(self._lists[rule], self.batch))
                if not chunk:
                    break
                for guard, rows in _by_guard(chunk).items():
                    removed += max(self.store.execute(*_delete(guard, rows)).rowcount, 0)
        return removed

    def _old_slack_threads(self, cutoff: float) -> list[Gone]:
        old: list[Gone] = []
        for (key,) in self.store.execute(
            "SELECT key FROM kv WHERE key >= ? AND key < ?", (THREADS, THREADS[:-1] + "/")
        ):
            with suppress(ValueError):
                if float(key.rpartition("/")[2]) < cutoff:
                    old.append((key, "", ()))
        return old

    def _old_discord_threads(self, cutoff: float) -> list[Gone]:
        live = {k for (k,) in self.store.execute(
            "SELECT key FROM conversations WHERE agent = 'coordinator'"
            " AND key >= 'discord:' AND key < 'discord;'"
        )} | {c for (c,) in self.store.execute(self.needed)}  # fmt: skip
        old: list[Gone] = []
        for thread, parent in self.store.kv_prefixed(DISCORD_THREADS).items():
            try:
                begun = MARK_TIMES["discord"](thread)
            except ValueError:
                continue
            if begun < cutoff and (conv := f"discord:{parent}/{thread}") not in live:
                old.append((DISCORD_THREADS + thread, _PLACE_GONE, (conv,)))
        return old

    def _orphans(self, recent: float) -> list[Gone]:
        """The rows whose owner is gone, found by the database (a set difference over the
        keys' index), in key order: Python sees only those, not every key and every
        conversation."""
        needed = {c for (c,) in self.store.execute(self.needed)}  # something waits there
        gone: list[Gone] = []
        for (key,) in self.store.execute(_PROMPTS_GONE):
            agent, _, conv = key[len("prompt:") :].partition(":")
            gone.append((key, _CONVERSATION_GONE, (agent, conv)))
        gone += [
            (key, _WORKER_GONE, (key[len("worker-people:") :],))
            for (key,) in self.store.execute(_ASKERS_GONE)
        ]
        for prefix in ("people:speaker:", "people:speaker-id:"):
            for (key,) in self.store.execute(_speakers_gone(prefix), (recent,)):
                if (place := key[len(prefix) :]) not in needed:
                    gone.append((key, _PLACE_GONE, (place,)))
        for (key,) in self.store.execute(_SPOKE_IN_GONE, (_UNIT, _UNIT, recent)):
            if (place := key.partition(_UNIT)[2]) not in needed:
                gone.append((key, _PLACE_GONE, (place,)))
        return gone

    def _stale_marks(self, cutoff: float) -> list[Gone]:
        needed: set[str] = set()  # a place something waits in, or one of its threads
        for (conv,) in self.store.execute(self.needed):
            parts = conv.split("/")
            needed.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
        gone: list[Gone] = []
        for kind, when in MARK_TIMES.items():
            for place, raw in self.store.kv_prefixed(f"{kind}.watermark.").items():
                if f"{kind}:{place}" in needed:
                    continue
                if (at := _mark_time(raw, when)) is not None and at < cutoff:
                    gone.append((f"{kind}.watermark.{place}", "", ()))
        for ident, raw in self.store.kv_prefixed("people:last:").items():
            if (at := _float(raw)) is not None and at < cutoff:
                gone.append(("people:last:" + ident, "", ()))
        return gone


def _range(prefix: str) -> str:
    """`key >= '<prefix>' AND key < '<prefix, its last character one on>'`: the keys'
    index, by bytes (the prefixes here are ASCII, ending in ':')."""
    return f"key >= '{prefix}' AND key < '{prefix[:-1]}{chr(ord(prefix[-1]) + 1)}'"


#: a prompt snapshot (`prompt:<agent>:<conversation>`) whose conversation is gone
_PROMPTS_GONE = (
    f"SELECT key FROM kv WHERE {_range('prompt:')}"
    " EXCEPT SELECT ('prompt:' || agent || ':' || key) COLLATE BINARY FROM conversations"
    " ORDER BY 1"
)
#: who asked a worker (`worker-people:<id>`), the worker gone
_ASKERS_GONE = (
    f"SELECT key FROM kv WHERE {_range('worker-people:')}"
    " EXCEPT SELECT ('worker-people:' || id) COLLATE BINARY FROM workers ORDER BY 1"
)


def _speakers_gone(prefix: str) -> str:
    """Who spoke at a place (`<prefix><place>`), no conversation kept there and nobody
    heard there since `?`."""
    return (
        f"SELECT key FROM kv WHERE {_range(prefix)}"
        f" EXCEPT SELECT ('{prefix}' || key) COLLATE BINARY FROM conversations"
        " WHERE agent = 'coordinator'"
        f" EXCEPT SELECT ('{prefix}' || conversation) COLLATE BINARY FROM inbound"
        " WHERE received_at >= ? ORDER BY 1"
    )


#: separates the person from the place in `people:in:<person>\x1f<place>`
_UNIT = "\x1f"
#: the places a person spoke in (`people:in:`), as `_speakers_gone`
_SPOKE_IN_GONE = (
    f"SELECT key FROM kv WHERE {_range('people:in:')} AND substr(key, instr(key, ?) + 1) IN"
    f" (SELECT substr(key, instr(key, ?) + 1) FROM kv WHERE {_range('people:in:')}"
    " EXCEPT SELECT key COLLATE BINARY FROM conversations WHERE agent = 'coordinator'"
    " EXCEPT SELECT conversation COLLATE BINARY FROM inbound WHERE received_at >= ?)"
    " ORDER BY key"
)
#: the checks a delete makes, on the row `v` of its VALUES list (`v.column1` the key,
#: then the row's arguments): its conversation, its place's, its worker still gone
_CONVERSATION_GONE = (
    "NOT EXISTS (SELECT 1 FROM conversations c WHERE c.agent = v.column2 AND c.key = v.column3)"
)
#: no conversation is kept at the place (while something waits in one, it is kept)
_PLACE_GONE = (
    "NOT EXISTS (SELECT 1 FROM conversations c WHERE c.agent = 'coordinator' AND c.key = v.column2)"
)
_WORKER_GONE = "NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = v.column2)"


def _by_guard(chunk: list[Gone]) -> dict[str, list[Gone]]:
    groups: dict[str, list[Gone]] = {}
    for row in chunk:
        groups.setdefault(row[1], []).append(row)
    return groups


def _delete(guard: str, rows: list[Gone]) -> tuple[str, tuple[str, ...]]:
    """One statement deleting `rows` (all with the check `guard`, "" for none)."""
    if not guard:
        marks = ", ".join("?" * len(rows))
        return f"DELETE FROM kv WHERE key IN ({marks})", tuple(key for key, _, _ in rows)
    width = 1 + len(rows[0][2])
    values = ", ".join(["(" + ", ".join("?" * width) + ")"] * len(rows))
    args = tuple(value for key, _, more in rows for value in (key, *more))
    return (
        f"DELETE FROM kv WHERE key IN (SELECT v.column1 FROM (VALUES {values}) AS v WHERE {guard})",
        args,
    )


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
