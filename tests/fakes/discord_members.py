"""The fake Discord's member lookups (a mixin of `FakeDiscord`): `GET
/guilds/{guild}/members/{user}` as Discord answers it (the member object, or 404
"Unknown Member", code 10007), and `hide`, which gives a channel a member overwrite
denying VIEW_CHANNEL, so discord.py's `permissions_for` says the member cannot see it.
"""

from __future__ import annotations

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import json_response


class MembersApi:
    channels: dict[str, p.Payload]

    async def _get_member(self, request: web.Request) -> web.Response:
        """GET /guilds/{id}/members/{user} (no privileged intent needed, as on Discord)."""
        self._seen(request)
        uid = int(request.match_info["uid"])
        if request.match_info["gid"] != str(p.GUILD_ID) or uid not in p.USERS:
            return json_response({"message": "Unknown Member", "code": 10007}, 404)
        return json_response(p.member(uid))

    def hide(self, channel: int, user: int) -> None:
        """A member overwrite denying `user` VIEW_CHANNEL in `channel` (before start:
        the guild's channels travel in GUILD_CREATE)."""
        deny = {"id": str(user), "type": 1, "allow": "0", "deny": str(p.VIEW_CHANNEL)}
        self.channels[str(channel)]["permission_overwrites"].append(deny)
