"""The Discord threads the bot is in, so follow-ups there need no mention.

A thread is ours when the bot started it (to answer a mention, or to hold a worker's
question) or when someone mentioned the bot inside it. Intake only `note`s a thread
in memory, keeping SQLite writes off the journal-before-ack path; delivery `join`s
it, which also writes it (with its parent channel) to the store's key/value table,
so follow-ups there need no mention after a restart. The newest MAX_KNOWN threads are
held in memory, as every channel message is checked against them; an older one is
looked up in the store when someone writes in a thread (a follow-up in a months-old
thread). Rows older than SWITCHBOARD_RETENTION are pruned (bot/store/prune.py).
"""

from __future__ import annotations

from bot.seam import Bounded, ChannelStore

_KEY = "discord.thread:"
#: threads held in memory (~150 bytes each): the newest by id (a snowflake: its start).
#: Past it the oldest quarter is let go (their rows stay: `parent` reads the store for
#: a thread no newer than the newest let go)
MAX_KNOWN = 20_000
#: names of threads not created yet: a reply that is never delivered leaves its name;
#: past this the oldest goes (its thread, if ever created, is named after the reply)
MAX_NAMES = 1_000


class Threads:
    def __init__(self, store: ChannelStore) -> None:
        self.store = store
        self._parents = store.kv_prefixed(_KEY)  # only this process writes them
        self._stored: set[str] = set(self._parents)
        self._floor = 0  # the newest thread id let go: older ones are read from the store
        #: names for threads not created yet (a mention's thread is named after it);
        #: each leaves when its thread is created (at most MAX_NAMES, the oldest leaves)
        self.names: Bounded[str, str] = Bounded(MAX_NAMES)
        self._trim()

    def note(self, thread_id: str, parent_id: str) -> None:
        """In memory only: the reply's delivery `join`s it for good."""
        if _id(thread_id) > self._floor:
            self._parents.setdefault(thread_id, parent_id)
            self._trim()

    def name(self, thread_id: str, name: str) -> None:
        """The name a thread gets when it is created (the first name given stays)."""
        self.names.setdefault(thread_id, name)

    def join(self, thread_id: str, parent_id: str) -> None:
        if thread_id in self._stored:
            return
        self.store.set_kv(_KEY + thread_id, parent_id)
        if _id(thread_id) > self._floor:
            self._parents[thread_id] = parent_id
            self._stored.add(thread_id)
            self._trim()

    def parent(self, thread_id: str, maybe_thread: bool = True) -> str | None:
        """The parent channel of a thread we are in, else None. `maybe_thread`: the
        channel is a thread or unknown to discord.py (a guild's own channels are not
        looked up in the store)."""
        found = self._parents.get(thread_id)
        if found is None and maybe_thread and 0 < _id(thread_id) <= self._floor:
            found = self.store.get_kv(_KEY + thread_id)
        return found

    def is_ours(self, thread_id: str, maybe_thread: bool = True) -> bool:
        return self.parent(thread_id, maybe_thread) is not None

    def _trim(self) -> None:
        if len(self._parents) <= MAX_KNOWN:
            return
        oldest = sorted(self._parents, key=_id)[: len(self._parents) - MAX_KNOWN * 3 // 4]
        self._floor = max(self._floor, _id(oldest[-1]))
        for thread in oldest:
            del self._parents[thread]
            self._stored.discard(thread)


def _id(thread_id: str) -> int:
    try:
        return int(thread_id)
    except ValueError:
        return 0
