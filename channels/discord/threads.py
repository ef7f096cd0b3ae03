"""The Discord threads the bot is in, so follow-ups there need no mention.

A thread is ours when the bot started it (to answer a mention, or to hold a worker's
question) or when someone mentioned the bot inside it. Intake only `note`s a thread
in memory, keeping SQLite writes off the journal-before-ack path; delivery `join`s
it, which also writes it (with its parent channel) to the store's key/value table,
so follow-ups there need no mention after a restart. The stored threads are read once
at start: every channel message is checked against them.
"""

from __future__ import annotations

from bot.seam import ChannelStore

_KEY = "discord.thread:"


class Threads:
    def __init__(self, store: ChannelStore) -> None:
        self.store = store
        self._parents = store.kv_prefixed(_KEY)  # only this process writes them
        self._stored: set[str] = set(self._parents)
        #: names for threads not created yet (a mention's thread is named after it)
        self.names: dict[str, str] = {}

    def note(self, thread_id: str, parent_id: str) -> None:
        """In memory only: the reply's delivery `join`s it for good."""
        self._parents.setdefault(thread_id, parent_id)

    def join(self, thread_id: str, parent_id: str) -> None:
        if thread_id in self._stored:
            return
        self._parents[thread_id] = parent_id
        self._stored.add(thread_id)
        self.store.set_kv(_KEY + thread_id, parent_id)

    def parent(self, thread_id: str) -> str | None:
        """The parent channel of a thread we are in, else None."""
        return self._parents.get(thread_id)

    def is_ours(self, thread_id: str) -> bool:
        return thread_id in self._parents
