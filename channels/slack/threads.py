"""The Slack threads the bot is in: it was mentioned there, or it posted there.

A follow-up in such a thread reaches the bot without a mention. The set lives in the
store's key/value table (one key per thread), so it survives restarts; it is read once
at start, as every channel message is checked against it.
"""

from __future__ import annotations

from bot.seam import ChannelStore

_PREFIX = "slack.thread."


class ThreadMemory:
    def __init__(self, store: ChannelStore) -> None:
        self.store = store
        # only this process writes them; grows by a thread the bot joins, until a restart
        # (the rows older than SWITCHBOARD_RETENTION are pruned: bot/store/prune.py)
        self._known = set(store.kv_prefixed(_PREFIX))

    def remember(self, channel: str, thread_ts: str) -> None:
        key = f"{channel}/{thread_ts}"
        if key not in self._known:
            self._known.add(key)
            self.store.set_kv(_PREFIX + key, "1")

    def recent(self, since: float) -> list[str]:
        """`<channel>/<thread_ts>` of the threads begun since `since`, newest first."""
        dated = []
        for key in self._known:
            try:
                dated.append((float(key.rpartition("/")[2]), key))
            except ValueError:
                continue
        return [key for at, key in sorted(dated, reverse=True) if at >= since]

    def knows(self, channel: str, thread_ts: str) -> bool:
        return f"{channel}/{thread_ts}" in self._known
