"""A channel's live-progress surface (bot/core/progress.py) that records what it was
asked to show, for tests of the progress keeper and of the pages that end work."""

from __future__ import annotations

from bot.core.messages import Inbound, Target


class Surface:
    def __init__(self, refresh: float = 60.0) -> None:
        self.refresh_seconds = refresh
        self.shown: list[str] = []
        self.ended: list[Target] = []

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        self.shown.append(status)

    async def received(self, msg: Inbound, react: bool) -> None:
        pass

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        self.ended.append(target)

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        pass

    def restart(self, target: Target) -> None:
        pass

    async def abandon(self, target: Target) -> None:
        pass
