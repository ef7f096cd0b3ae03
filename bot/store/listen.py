"""The leader's ear: PostgreSQL's LISTEN on the channel the nodes announce on.

A follower journals a person's message, queues a notice or records an approval
decision, and announces it in the same transaction (`Store.notify`: delivered at the
commit). The leader hears it here, on a session of its own in a thread, and hands the
topic to the event loop: no polling, and nothing is lost if a notice is (the leader
reads the journal and the outbox from the tables, and reads them all when it starts
leading).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import psycopg

from bot.store.migrations import CHANNEL
from bot.store.postgres import LIBPQ

log = logging.getLogger(__name__)
#: how often the thread looks up from its wait to see whether it should stop
POLL_SECONDS = 0.5
RETRY_SECONDS = 1.0


class Listener:
    def __init__(self, url: str, heard: Callable[[str], None]) -> None:
        self.url = url
        self.heard = heard
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        def hand(topic: str) -> None:
            loop.call_soon_threadsafe(self.heard, topic)

        self._thread = threading.Thread(target=self._run, args=(hand,), name="listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=POLL_SECONDS * 4)

    def _run(self, hand: Callable[[str], None]) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, **LIBPQ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    hand("all")  # anything announced while nobody listened
                    self._hear(conn, hand)
            except psycopg.Error as exc:
                log.warning("listening for the other nodes failed (%s); again in 1 s", exc)
                self._stop.wait(RETRY_SECONDS)

    def _hear(self, conn: psycopg.Connection[object], hand: Callable[[str], None]) -> None:
        while not self._stop.is_set():
            for note in conn.notifies(timeout=POLL_SECONDS):
                hand(note.payload)
