"""The Slack threads the bot is in: it was mentioned there, or it posted there.

A follow-up in such a thread reaches the bot without a mention. The set lives in the
store's key/value table (one key per thread), so it survives restarts; the newest
MAX_KNOWN threads are also held in memory, as every channel message is checked against
them; an older one is looked up in the store (a follow-up in a months-old thread).
"""

from __future__ import annotations

from bot.seam import ChannelStore

_PREFIX = "slack.thread."
#: threads held in memory (~100 bytes each): the newest by the thread's start. Past it
#: the oldest quarter is let go (their rows stay: `knows` reads the store for them); the
#: rows older than SWITCHBOARD_RETENTION are pruned (bot/store/prune.py)
MAX_KNOWN = 20_000


class ThreadMemory:
    def __init__(self, store: ChannelStore) -> None:
        self.store = store
        #: `<channel>/<thread_ts>` -> the thread's start (epoch seconds; 0: unreadable)
        self._known = {key: _started(key) for key in store.kv_prefixed(_PREFIX)}
        self._floor = 0.0  # the newest start let go: older threads are read from the store
        self._trim()

    def remember(self, channel: str, thread_ts: str) -> None:
        key = f"{channel}/{thread_ts}"
        if key in self._known:
            return
        self.store.set_kv(_PREFIX + key, "1")
        started = _started(key)
        if started > self._floor:
            self._known[key] = started
            self._trim()

    def recent(self, since: float) -> list[str]:
        """`<channel>/<thread_ts>` of the threads begun since `since`, newest first (those
        held in memory: the catch-up's window is far newer than MAX_KNOWN threads)."""
        dated = sorted(((at, key) for key, at in self._known.items() if at), reverse=True)
        return [key for at, key in dated if at >= since]

    def knows(self, channel: str, thread_ts: str) -> bool:
        key = f"{channel}/{thread_ts}"
        if key in self._known:
            return True
        return _started(key) <= self._floor and self.store.get_kv(_PREFIX + key) is not None

    def _trim(self) -> None:
        if len(self._known) <= MAX_KNOWN:
            return
        dated = sorted(self._known.items(), key=lambda item: item[1])
        gone = dated[: len(dated) - MAX_KNOWN * 3 // 4]
        self._floor = max(self._floor, gone[-1][1])
        self._known = {key: at for key, at in dated if at > self._floor}


def _started(key: str) -> float:
    try:
        return float(key.rpartition("/")[2])
    except ValueError:
        return 0.0
