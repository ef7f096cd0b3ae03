"""The outbox paces posts by the channel's pace key, so targets that share one platform
rate limit (threads of one Slack channel) are spaced out instead of fired together."""

from __future__ import annotations

import asyncio
import itertools
import time

from bot.core.channel import BaseChannel
from bot.core.messages import DeliveryReceipt, Outbound, Target
from config.settings import Settings
from tests.kits.app_kit import running_app

PACE = 0.2


class PerAddress(BaseChannel):
    """A channel whose platform limits posts per address, whatever the thread."""

    kind = "discord"
    pace_seconds = PACE

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.done = asyncio.Event()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def pace_key(self, target: Target) -> str:
        return f"{target.kind}:{target.address}"

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        self.times[str(msg.target)] = time.monotonic()
        if len(self.times) == 3:
            self.done.set()
        return DeliveryReceipt(platform_id=msg.id)


async def test_threads_sharing_a_pace_key_are_spaced(settings: Settings) -> None:
    channel = PerAddress()
    async with running_app(settings, [channel]) as app:
        for thread in ("t1", "t2", "t3"):
            app.human.say(Outbound("coordinator", Target("discord", "42", thread), "hi"))
        await asyncio.wait_for(channel.done.wait(), 10)
    times = sorted(channel.times.values())
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # each post takes the next slot, PACE after the one before; a slot's sleep that ends
    # late on a loaded machine shortens the gap after it (0.18 s seen), never to together
    assert len(times) == 3 and all(gap >= PACE / 2 for gap in gaps), gaps
    assert times[-1] - times[0] >= 2 * PACE * 0.95, gaps
