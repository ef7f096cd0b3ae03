"""Failed sign-ins per client address: a few a minute, then a wait.

A sliding window per address: `failed(who)` notes a wrong token, `wait(who)` says how
many seconds until that address may try again (0 while it has fewer than `limit`
failures in the last `window` seconds). With tokens of at least 8 characters a guesser
then needs centuries; the operator who typed a token wrong waits a minute at most. The
table is bounded (the oldest address is forgotten first), so a flood of addresses
cannot grow it without end.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from bot.core.bounded import Bounded

LIMIT = 5
WINDOW_SECONDS = 60.0
MAX_CLIENTS = 10_000


class Throttle:
    def __init__(
        self,
        limit: int = LIMIT,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: Bounded[str, deque[float]] = Bounded(MAX_CLIENTS)

    def failed(self, who: str) -> None:
        times = self._failures.get(who) or deque(maxlen=self.limit)
        times.append(self.clock())
        self._failures.put(who, times)  # the newest failure is last: the oldest leave first

    def wait(self, who: str) -> float:
        times = self._failures.get(who)
        if times is None or len(times) < self.limit:
            return 0.0
        left = times[0] + self.window - self.clock()
        if left <= 0:
            del self._failures[who]
            return 0.0
        return left
