"""Channel health from the connections themselves.

Event listeners alone cannot tell a socket that died without a close frame, or a
reconnect that keeps being refused: nothing fires. So every PROBE_SECONDS each
channel that can is asked for its connection's own state (`probe()`: Slack's Socket
Mode client's connection check and ping age, Discord's gateway socket and heartbeat
acks, the IMAP session's last answer) and a change is written to the store's health
table, which `/healthz`, `/metrics`, `switchboard status` and the dashboard read. A
lost connection shows within PROBE_SECONDS of the channel noticing, and a
connection back up likewise.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.ops.desk import OpsView

log = logging.getLogger(__name__)

PROBE_SECONDS = 2.0
Probe = Callable[[], Awaitable[tuple[str, str] | None]]


async def probe_channels(view: OpsView, interval: float = PROBE_SECONDS) -> None:
    while True:
        await probe_once(view, interval)
        await asyncio.sleep(interval)


async def probe_once(view: OpsView, limit: float = PROBE_SECONDS) -> None:
    stored = {channel: state for channel, state, _d, _t in view.store.health()}
    for channel in list(view.channels):
        probe: Probe | None = getattr(channel, "probe", None)
        if probe is None:
            continue
        try:
            found = await asyncio.wait_for(probe(), limit)
        except Exception as exc:  # a probe that fails says nothing; the next one may
            log.warning("probing %s failed: %s", channel.kind, exc)
            continue
        if found is not None and found[0] != stored.get(channel.kind):
            view.store.set_health(channel.kind, *found)
            view.events.emit("channel.health", channel.kind, state=found[0], detail=found[1])
