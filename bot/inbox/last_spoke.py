"""When each platform id last spoke to the bot (`people:last:<platform id>`, which
`catchup` reads since): exact in memory, written to the store only when it moved by at
least `STEP` seconds, so a busy person costs one write a minute, not one per message.

A clean stop writes what the store lacks (`flush`); a crash loses at most the last
`STEP` seconds of it (catchup then shows a few answers the person had already seen,
never hides one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from bot.core.bounded import Bounded
from bot.store.core import Store

KEY = "people:last:"
#: seconds the stored mark may lag behind the newest message
STEP = 60.0
#: platform ids held in memory: past it the one heard least recently leaves (its exact
#: time written first if the store lags behind it)
MAX_HELD = 10_000


class LastSpoke:
    def __init__(self, store: Store | None, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock  # the outbox's clock: catchup compares it with sent_at
        #: platform id -> (when it last spoke, the time the store holds), oldest first
        self._held: Bounded[str, tuple[float, float]] = Bounded(MAX_HELD, self._let_go)

    def spoke(self, ident: str) -> None:
        now = self.clock()
        stored = self._held.get(ident, (0.0, 0.0))[1]
        if now - stored >= STEP:
            self._write(ident, now)
            stored = now
        self._held.put(ident, (now, stored))

    def _let_go(self, gone: str, times: tuple[float, float]) -> None:
        """Past MAX_HELD: the one heard least recently leaves, its exact time written."""
        at, stored = times
        if at > stored:
            self._write(gone, at)

    def flush(self) -> None:
        """Write every time the store lags behind (a clean stop loses none)."""
        for ident, (at, stored) in list(self._held.items()):
            if at > stored:
                self._write(ident, at)
                self._held[ident] = (at, at)

    def last(self, idents: Iterable[str]) -> float | None:
        """The newest time any of these ids spoke (None: never, as far as is kept)."""
        found = []
        for ident in set(idents):
            held = self._held.get(ident)
            stored = _number(self.store.get_kv(KEY + ident)) if self.store is not None else None
            found += [t for t in (held[0] if held else None, stored) if t is not None]
        return max(found, default=None)

    def every(self) -> dict[str, float]:
        """Every id that spoke (as far as is kept), with when it last did."""
        raw = self.store.kv_prefixed(KEY) if self.store is not None else {}
        found = {i: at for i, v in raw.items() if (at := _number(v)) is not None}
        for ident, (at, _) in self._held.items():
            found[ident] = max(at, found.get(ident, at))
        return found

    def _write(self, ident: str, at: float) -> None:
        if self.store is not None:
            self.store.set_kv(KEY + ident, repr(at))


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None
