"""Attempt records: each part of an outbound message is posted at most once, across crashes.

A platform with no idempotency key of its own (Slack's `chat.postMessage`, file
uploads) cannot say whether a post whose answer was lost reached it. So a channel
records, before each platform call, that the part is being tried (committed before the
request leaves), and after the answer that it was posted, with what the platform said.
A part found `trying` when it comes up again (the process died, or the connection
broke, between the platform's answer and that record) is first looked up on the
platform (`find`) and posted only when it is not there. The records of a message are
dropped when the outbox marks it sent or failed, in that same transaction, so a crash
anywhere leaves either the records or the finished row.

    attempts = Attempts(store, msg.id)
    answer = await attempts.once("0", post=lambda: post_chunk(0), find=look_in_thread)

Parts are named by the channel: `"0"`, `"1"`... for the chunks of a split message, for
instance `"file:<name>"` for an upload. A part already `posted` is not posted again, so
a split message resumes after its last posted part. A corrupt record reads as `trying`:
looked up, never blindly repeated.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.channel import ChannelStore
from bot.store.core import AttemptRow

#: what the platform answered for a part (its ids), as the channel wants it back
Answer = dict[str, Any]
Post = Callable[[], Awaitable[Answer]]
Find = Callable[[AttemptRow], Awaitable[Answer | None]]


class Attempts:
    """The attempt records of one outbound message (read once, at construction)."""

    def __init__(self, store: ChannelStore, outbox_id: str) -> None:
        self.store = store
        self.outbox_id = outbox_id
        self._rows = {row.part: row for row in store.outbox.attempts(outbox_id)}

    def posted(self, part: str) -> Answer | None:
        """What the platform answered for `part`, if it is known to be posted."""
        row = self._rows.get(part)
        return row.detail if row is not None and row.state == "posted" else None

    def tried(self, part: str) -> AttemptRow | None:
        """The record of a part tried without a recorded answer: it may exist."""
        row = self._rows.get(part)
        return row if row is not None and row.state == "trying" else None

    async def once(
        self, part: str, post: Post, find: Find, detail: dict[str, Any] | None = None
    ) -> Answer:
        """Post `part` unless it is known posted, or `find` finds it after a try whose
        answer was lost. `detail` is kept with the try (what `find` needs to look)."""
        done = self.posted(part)
        if done is not None:
            return done
        tried = self.tried(part)
        if tried is not None:
            found = await find(tried)
            if found is not None:
                self.record(part, "posted", found)
                return found
        self.record(part, "trying", detail or {})
        answer = await post()
        self.record(part, "posted", answer)
        return answer

    def record(self, part: str, state: str, detail: dict[str, Any]) -> None:
        row = AttemptRow(part, state, detail, time.time())
        self.store.outbox.set_attempt(self.outbox_id, row)  # committed: the store autocommits
        self._rows[part] = row
