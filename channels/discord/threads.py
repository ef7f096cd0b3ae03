"""The Discord threads the bot is in, so follow-ups there need no mention.

A thread is ours when the bot started it (to answer a mention, or to hold a worker's
question) or when someone mentioned the bot inside it. Thread ids are kept with
their parent channel in the store's key/value table, so this survives restarts;
the dict in front of it keeps the hot path (every message in a thread) off SQLite.
Touches only `Store.get_kv` / `Store.set_kv`.
"""

from __future__ import annotations

from bot.store import Store

_KEY = "discord.thread:"


class Threads:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._parents: dict[str, str] = {}
        #: names for threads not created yet (a mention's thread is named after it)
        self.names: dict[str, str] = {}

    def join(self, thread_id: str, parent_id: str) -> None:
        if self._parents.get(thread_id) == parent_id:
            return
        self._parents[thread_id] = parent_id
        self.store.set_kv(_KEY + thread_id, parent_id)

    def parent(self, thread_id: str) -> str | None:
        """The parent channel of a thread we are in, else None."""
        parent = self._parents.get(thread_id)
        if parent is None:
            parent = self.store.get_kv(_KEY + thread_id)
            if parent is not None:
                self._parents[thread_id] = parent
        return parent

    def is_ours(self, thread_id: str) -> bool:
        return self.parent(thread_id) is not None
