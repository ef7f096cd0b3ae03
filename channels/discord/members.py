"""Who may read or post in a Discord channel, for the scope check (bot/inbox/scope.py
`Membership`): the channel's permissions for the member, as discord.py computes them
from the guild's roles and the channel's overwrites (a thread: its parent's). The
member is fetched over REST when not cached (no privileged intent needed). A DM is
its recipient's. A channel or member Discord does not know answers False; a failed
call or a channel not in the cache answers None (the scope then asks a person).
"""

from __future__ import annotations

import logging

import discord

from bot.seam import Target

log = logging.getLogger(__name__)


class DiscordMembers:
    def __init__(self, client: discord.Client) -> None:
        self.client = client

    async def can_read(self, user_id: str, target: Target) -> bool | None:
        perms = await self._permissions(user_id, target)
        return None if perms is None else perms.view_channel and perms.read_message_history

    async def can_post(self, user_id: str, target: Target) -> bool | None:
        perms = await self._permissions(user_id, target)
        return None if perms is None else perms.view_channel and perms.send_messages

    async def _permissions(self, user_id: str, target: Target) -> discord.Permissions | None:
        if not (user_id.isdigit() and target.address.isdigit()):
            return None
        channel = self.client.get_channel(int(target.address))
        if isinstance(channel, discord.DMChannel):
            mine = channel.recipient is not None and channel.recipient.id == int(user_id)
            return discord.Permissions.text() if mine else discord.Permissions.none()
        if not isinstance(channel, discord.abc.GuildChannel):
            return None
        try:
            member = await self._member(channel.guild, int(user_id))
        except discord.HTTPException as exc:
            log.info("member %s of %s not fetched: %s", user_id, channel.guild.id, exc)
            return None
        if member is None:
            return discord.Permissions.none()
        return channel.permissions_for(member)

    async def _member(self, guild: discord.Guild, user_id: int) -> discord.Member | None:
        cached = guild.get_member(user_id)
        if cached is not None:
            return cached
        try:
            return await guild.fetch_member(user_id)
        except discord.NotFound:
            return None
