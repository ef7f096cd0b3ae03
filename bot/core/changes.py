"""The console hears of a channel or MCP server once per change of its state ("email:
reconnecting (ConnectionRefusedError: …)", then "email: connected"), never once per
retry: a failure that repeats every few seconds is one line, and its end another."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("switchboard")

#: states that mean something is wrong (said as warnings)
BAD = frozenset({"failed", "reconnecting", "restarting", "stopped", "unknown", "error"})
#: states said at first only when bad (a start says "connecting" for everything)
QUIET = frozenset({"connecting", "starting"})


class Changes:
    def __init__(self) -> None:
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()

    def state(self, what: str, state: str, detail: str = "") -> None:
        with self._lock:
            before = self._last.get(what)
            if before == state:
                return
            self._last[what] = state
        if state in QUIET or (before is None and state not in BAD):
            return
        said = f"{what}: {state}" + (f" ({detail})" if detail else "")
        if state in BAD:
            log.warning(said)
        else:
            log.info(said + (f", was {before}" if before not in (None, *QUIET) else ""))


#: one per process: channels and MCP servers report here
CHANGES = Changes()
