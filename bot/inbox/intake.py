"""File intake: a person's message with files is journaled first, routed once its
files are saved.

A channel hands the human node a message whose attachments still have to be
downloaded (Slack, Discord). The node journals it with status `fetching` before the
channel acks, then this module downloads each file through the channel's `Fetcher`
(retried with backoff, under a timeout), saves it (`bot.inbox.files`), and records the
saved attachment in the journal row after each file, so a restart resumes with the
files not yet saved and never fetches one twice. Then the message is routed, with a
note to the person for each file that could not be read. Later messages of the same
conversation wait behind it, so a conversation is still answered in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from bot.core.events import EventLog
from bot.core.messages import HUMAN, Attachment, Inbound
from bot.core.notices import unread_files
from bot.core.tasks import cancel_all
from bot.inbox.files import FileStore
from bot.outbox.sender import backoff
from bot.store.core import InboundStatus, Store

log = logging.getLogger(__name__)

FETCHING: InboundStatus = "fetching"
#: A download is tried 3 times in all, each under a 60 s timeout; the waits between
#: tries double from 0.5 s (`bot.outbox.sender.backoff`: 0.25-0.5 s, then 0.5-1 s). Stated in
#: docs/conversations.md, "Files"; a test passes a smaller base.
ATTEMPTS = 3
RETRY_BASE_SECONDS = 0.5
TIMEOUT_SECONDS = 60.0
INLINE_SAVE_BYTES = 256 * 1024


class FetchError(Exception):
    """A download failed; `transient` ones are retried."""

    def __init__(self, message: str, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class FileTooLarge(FetchError):
    """The platform says (or the bytes show) the file is over the cap."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes", transient=False)
        self.size = size


class Fetcher(Protocol):
    """How a channel downloads one attachment (its `source`, or what its platform id
    `ref` leads to), at most `max_bytes`."""

    async def fetch(self, att: Attachment, max_bytes: int) -> bytes: ...


Release = Callable[[int, Inbound, str | None], None]


class FileIntake:
    def __init__(
        self,
        store: Store,
        events: EventLog,
        files: FileStore,
        release: Release,
        *,
        retry_base: float = RETRY_BASE_SECONDS,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.store = store
        self.events = events
        self.files = files
        self.fetchers: dict[str, Fetcher] = {}
        self._release = release
        self.retry_base = retry_base
        self.timeout = timeout
        self._last: dict[str, asyncio.Task[None]] = {}  # per conversation: the newest hold

    def register(self, kind: str, fetcher: Fetcher) -> None:
        self.fetchers[kind] = fetcher

    def must_hold(self, msg: Inbound) -> bool:
        """Files to fetch, or an earlier message of the conversation still held."""
        prior = self._last.get(msg.conversation)
        return any(a.pending for a in msg.attachments) or (prior is not None and not prior.done())

    def hold(self, inbound_id: int, msg: Inbound) -> None:
        """The message is journaled as `fetching`: fetch its files, then release it."""
        prior = self._last.get(msg.conversation)
        task = asyncio.get_running_loop().create_task(
            self._run(inbound_id, msg, prior), name=f"intake:{inbound_id}"
        )
        self._last[msg.conversation] = task
        task.add_done_callback(lambda t: self._forget(msg.conversation, t))

    def resume(self) -> int:
        """After a restart: carry on with every message still fetching, in order."""
        rows = self.store.inbound_by_status(FETCHING)
        for inbound_id, msg in rows:
            self.hold(inbound_id, msg)
        return len(rows)

    async def stop(self) -> None:
        await cancel_all(list(self._last.values()))

    def _forget(self, conversation: str, task: asyncio.Task[None]) -> None:
        if self._last.get(conversation) is task:
            del self._last[conversation]

    async def _run(self, inbound_id: int, msg: Inbound, prior: asyncio.Task[None] | None) -> None:
        if prior is not None:
            await asyncio.gather(prior, return_exceptions=True)
        try:
            for att in msg.attachments:
                if att.pending:
                    await self._fetch(msg.channel, att)
                    self.store.update_inbound(inbound_id, msg)  # never fetched twice
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not lose the message: answer it without files
            log.exception("fetching the files of %s failed", msg.message_id)
            for att in msg.attachments:
                if att.pending:
                    att.note = f"could not be read: {type(exc).__name__}"
        self._release(inbound_id, msg, notice(msg.attachments))

    async def _fetch(self, kind: str, att: Attachment) -> None:
        fetcher = self.fetchers.get(kind)
        if fetcher is None or not (att.source or att.ref):
            att.note = "could not be downloaded: nothing to fetch it from"
            return
        for attempt in range(ATTEMPTS):
            try:
                data = await asyncio.wait_for(
                    fetcher.fetch(att, self.files.max_bytes), self.timeout
                )
            except FileTooLarge as exc:
                self.files.too_large(att, exc.size)
                return
            except (FetchError, TimeoutError) as exc:
                problem = str(exc) or "timed out"
                transient = not isinstance(exc, FetchError) or exc.transient
                self.events.emit("file.fetch_failed", HUMAN, name=att.name, error=problem)
                if not transient or attempt == ATTEMPTS - 1:
                    att.note = f"could not be downloaded: {problem}"
                    return
                await asyncio.sleep(backoff(attempt, self.retry_base))
                continue
            if len(data) > INLINE_SAVE_BYTES:  # megabytes: hash and write off the loop
                await asyncio.to_thread(self.files.save, att, data)
            else:  # cheaper than the thread hop, which under load costs milliseconds
                self.files.save(att, data)
            self.events.emit("file.saved", HUMAN, name=att.name, size=att.size, path=att.path)
            return


def notice(attachments: list[Attachment]) -> str | None:
    """What the person is told about files that could not be read, if any."""
    return unread_files([(a.name, a.note) for a in attachments if a.note])
