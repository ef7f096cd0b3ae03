"""Catch-up watermarks: for each place (a channel, a thread, a DM) of one platform, the
message up to which everything said there has been read.

A platform that replays nothing to a new session (Discord after a fresh IDENTIFY, Slack
after its retry window) leaves a gap the channel reads back from the platform's
history, starting at the place's watermark. The watermark must never pass a message
that was not read, whatever moment a process dies at. So it advances only:

- when a catch-up has read a place's history to its end (`caught_up`), and
- from a live message once this session's catch-up of that place is over, or when the
  place is not being caught up at all (`live`): during the catch-up a live message says
  nothing about the gap before it, and a session that dies then must leave the mark
  where it was for the next session to read the gap.

Marks are platform ids ordered by `order` (snowflakes, Slack `ts`), stored in the
store's key/value table (`<kind>.watermark.<place>`), written in the caller's
transaction (with the journal write of the live message). A stored mark that does not
decode is quarantined and its place read back from a bounded window instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bot.core.bounded import Bounded
from bot.core.channel import ChannelStore

#: a place whose mark was corrupt (quarantined): read it back from a bounded window
UNKNOWN = ""
#: marks held in memory, the most recently written last; past it the oldest leaves
#: memory, its stored row stays (every Discord thread is a place: a month of them would
#: all stay). A catch-up reads the stored ones; a place whose mark is not held moves it
#: at its next message of ours, or not at all: at worst the mark is older than it could
#: be, and a catch-up reads more, never less.
MARKS_HELD = 20_000


@dataclass(frozen=True, slots=True)
class Place:
    place: str
    mark: str  # UNKNOWN: corrupt, read a bounded window
    at: float  # the mark's time (epoch seconds): which places are recent


class Watermarks:
    def __init__(
        self,
        store: ChannelStore,
        kind: str,
        order: Callable[[str], Any],
        when: Callable[[str], float],
    ) -> None:
        self.store = store
        self.prefix = f"{kind}.watermark."
        self.order = order
        self.when = when
        self._marks: Bounded[str, str] = Bounded(MARKS_HELD)
        #: places this session's catch-up has still to finish; None: its list is not
        #: made yet (a process starts as a new session), so no live message advances
        self._pending: set[str] | None = None
        self.load()

    # -- reading ---------------------------------------------------------------------
    def load(self) -> list[Place]:
        """Every stored place, newest mark first; corrupt ones (quarantined) as UNKNOWN."""
        places = []
        for place, raw in self.store.kv_prefixed(self.prefix).items():
            try:
                mark = str(json.loads(raw)["mark"])
                at = self.when(mark) if mark != UNKNOWN else 0.0
                if mark != UNKNOWN:
                    self.order(mark)
            except (ValueError, KeyError, TypeError) as exc:
                self.store.quarantine("kv", (self.prefix + place, raw), exc)
                # kept as unknown (durably, until the place is read): a bounded read
                self.store.set_kv(self.prefix + place, json.dumps({"mark": UNKNOWN}))
                mark, at = UNKNOWN, 0.0
            places.append(Place(place, mark, at))
        places.sort(key=lambda p: p.at, reverse=True)
        for p in reversed(places):  # the newest held last: past MARKS_HELD the oldest leave
            if p.mark != UNKNOWN:
                self._marks.put(p.place, p.mark)
        return places

    def listening_since(self, now: float) -> float:
        """When the bot last heard this platform: the newest mark's time, else when it
        first ran with marks (recorded at the first call). What was said in a place
        with no mark since then was said while it could not hear."""
        key = self.prefix.removesuffix("watermark.") + "listening-since"
        raw = self.store.get_kv(key)
        try:
            first = float(raw) if raw is not None else None
        except ValueError:
            first = None
        if first is None:
            first = now
            self.store.set_kv(key, repr(now))
        newest = max((self.when(m) for m in self._marks.values()), default=0.0)
        return max(first, newest)

    def get(self, place: str) -> str | None:
        return self._marks.get(place)

    # -- the session -----------------------------------------------------------------
    def new_session(self) -> None:
        """A session that was replayed nothing began: until its catch-up says which
        places it reads, no live message may advance a mark."""
        self._pending = None

    def catching_up(self, places: Iterable[str]) -> None:
        self._pending = set(places)

    def caught_up(self, place: str, newest: str | None, complete: bool = True) -> None:
        """The catch-up read `place` up to `newest` (the last message it saw): to its
        end when `complete`, else it stopped at a bound (the place stays pending)."""
        if complete and self._pending is not None:
            self._pending.discard(place)
        if newest:
            self._advance(place, newest)

    def live(self, place: str, mark: str) -> None:
        """A message that arrived live (or was read back) in `place`."""
        if self._pending is not None and place not in self._pending:
            self._advance(place, mark)

    def opened(self, place: str, mark: str) -> None:
        """A place that begins at `mark` (a thread opened on that message): nothing
        before it can be unread."""
        if place not in self._marks and (self._pending is None or place not in self._pending):
            self._advance(place, mark)

    def forget(self, place: str) -> None:
        """A place that cannot be read any more (deleted, the bot removed)."""
        self._marks.pop(place, None)
        if self._pending is not None:
            self._pending.discard(place)
        self.store.delete_kv(self.prefix + place)

    def to_read(self, cutoff: float, most: int) -> dict[str, str]:
        """The places a catch-up reads: every place whose mark is UNKNOWN, then the
        `most` places with the newest marks set since `cutoff`; older marks are dropped
        (their places are read from the catch-up's window like new ones)."""
        stored = self.load()
        self.prune(p.place for p in stored if p.mark != UNKNOWN and p.at < cutoff)
        chosen = {p.place: p.mark for p in stored if p.mark == UNKNOWN}
        for p in stored:
            if p.mark != UNKNOWN and p.at >= cutoff and len(chosen) < most:
                chosen[p.place] = p.mark
        return chosen

    def prune(self, places: Iterable[str]) -> None:
        for place in places:
            self._marks.pop(place, None)
            self.store.delete_kv(self.prefix + place)

    def _advance(self, place: str, mark: str) -> None:
        old = self._marks.get(place)
        if old is not None and self.order(old) >= self.order(mark):
            return
        self._marks.put(place, mark)
        self.store.set_kv(self.prefix + place, json.dumps({"mark": mark}))
