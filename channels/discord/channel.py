"""The Discord channel as the core sees it: `kind`, `start`, `stop`, `deliver`.

It wires the roles together: the connection (`client.py`), the intake of
MESSAGE_CREATE (`events.py`), catching up after a gap (`catchup.py`) and delivery
(`deliver.py`). Pacing is left to discord.py, which follows Discord's per-channel
rate-limit buckets from the response headers, so the outbox adds no pause of its own
(`pace_seconds = 0`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import discord

from bot.seam import (
    BaseChannel,
    ChannelContext,
    DeliveryReceipt,
    Outbound,
    Page,
    Target,
    TransientDeliveryError,
    cancel_all,
)
from channels.discord import approvals, commands
from channels.discord.catchup import CatchUp
from channels.discord.client import GatewayClient, point_at
from channels.discord.deliver import Poster
from channels.discord.events import Intake
from channels.discord.files import DiscordFetcher
from channels.discord.live import DiscordLives
from channels.discord.members import DiscordMembers
from channels.discord.progress import DiscordProgress
from channels.discord.reading import DiscordReader
from channels.discord.threads import Threads
from config.settings import Settings

LOGIN_WAIT = 5.0  # a delivery waits this long for a login in progress


class DiscordChannel(BaseChannel):
    kind = "discord"
    pace_seconds = 0.0

    def __init__(self, ctx: ChannelContext, settings: Settings) -> None:
        assert settings.discord_bot_token is not None, "build() only when Discord is enabled"
        self._token = settings.discord_bot_token.get_secret_value()
        point_at(settings.discord_api_url, settings.discord_gateway_url)
        self.ctx = ctx
        self.threads = Threads(ctx.store)
        self.intake = Intake(
            ctx, self.threads, settings.discord_allowed_users, settings.discord_allowed_channels
        )
        self.client = GatewayClient(ctx.store, self._on_message, self._new_session)
        self._allowed = (settings.discord_allowed_users, settings.discord_allowed_channels)
        self.client.on_click = self._on_interaction
        self._registered = False
        self.catchup = CatchUp(self.client, ctx.store, self.intake)
        self.lives = DiscordLives(self.client, ctx.store)
        self.poster = Poster(self.client, self.threads, ctx.store, settings.data_dir, self.lives)
        self.reader = DiscordReader(self.client, settings.discord_allowed_channels)
        self.membership = DiscordMembers(self.client)
        self.fetcher = DiscordFetcher()
        self.progress = DiscordProgress(self.client, self.lives)  # typing, answers as written
        if ctx.intake is not None:
            ctx.intake.register(self.kind, self.fetcher)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self.client.run_forever(self._token), name="discord")

    async def probe(self) -> tuple[str, str] | None:
        """The gateway connection's own state (bot/ops/probe.py)."""
        return await self.client.probe()

    async def stop(self) -> None:
        await self.client.close()
        await self.fetcher.close()
        if self._task is not None:
            await cancel_all([self._task])
        self.client.health("stopped")

    def _on_message(self, message: discord.Message, me: discord.ClientUser) -> None:
        self.catchup.on_message(message, me)

    def _new_session(self) -> Coroutine[Any, Any, None]:
        # at once, as the session begins: no live message moves a mark until the
        # catch-up has said which places it reads
        self.catchup.marks.new_session()
        return self._catch_up()

    async def _on_interaction(self, interaction: discord.Interaction) -> None:
        """A button click (approvals) or the `/switchboard` command."""
        users, places = self._allowed
        if interaction.type == discord.InteractionType.application_command:
            await commands.on_command(interaction, self.ctx, users, places)
        else:
            await approvals.on_click(interaction, self.ctx.decide, users, places)

    async def _catch_up(self) -> None:
        if not self._registered:
            self._registered = await commands.register(self.client)
        seen, forgotten = await self.catchup.run()
        self.ctx.events.emit("channel.caught_up", self.kind, messages=seen, forgotten=forgotten)

    async def read_history(self, target: Target, since: float | None, limit: int) -> Page:
        return await self.reader.read_history(target, since, limit)

    async def can_read(self, user_id: str, target: Target) -> bool | None:
        return await self.membership.can_read(user_id, target)

    async def can_post(self, user_id: str, target: Target) -> bool | None:
        return await self.membership.can_post(user_id, target)

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        try:
            await asyncio.wait_for(self.client.logged_in.wait(), LOGIN_WAIT)
        except TimeoutError:
            raise TransientDeliveryError("Discord is not logged in yet", LOGIN_WAIT) from None
        if msg.meta.get("edit_only"):  # a late edit of an approval request, nothing posted
            await approvals.edit_request(self.client, msg, msg.target.thread or msg.target.address)
            return DeliveryReceipt()
        receipt = await self.poster.deliver(msg)
        if msg.meta.get("edit"):  # a decision: the request message shows it too
            await approvals.edit_request(self.client, msg, receipt.thread or msg.target.address)
        return receipt
