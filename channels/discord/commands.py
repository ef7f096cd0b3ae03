"""Discord's `/switchboard` application command: `/switchboard catchup` (docs/conversations.md).

The command is registered once per process when a gateway session begins (a global
bulk overwrite, `PUT /applications/{id}/commands`: idempotent, so a restart changes
nothing). Its use arrives as INTERACTION_CREATE type 2 and is answered at once (within
Discord's 3 s) with an ephemeral message (flag 64) only the person sees: what the agents
said in their own conversations since they last spoke. No model call; only
DISCORD_ALLOWED_USERS in DISCORD_ALLOWED_CHANNELS get an answer.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from bot.seam import ChannelContext, Sender
from channels.discord.approvals import allowed_here

log = logging.getLogger(__name__)

KIND = "discord"
NAME = "switchboard"
MAX_TEXT = 2000  # a message's content
COMMANDS: list[dict[str, Any]] = [
    {
        "name": NAME,
        "type": 1,  # CHAT_INPUT
        "description": "Switchboard: what the agents did for you",
        "options": [
            {
                "type": 1,  # SUB_COMMAND
                "name": "catchup",
                "description": "What the agents said to you since you last spoke",
            }
        ],
    }
]
NOT_ALLOWED = "Only people allowed to talk to this bot, in its channels, can use this."
HELP = "`/switchboard catchup`: what the agents said to you since you last spoke."


async def register(client: discord.Client) -> bool:
    """Declare the command (once the session knows the application's id)."""
    if client.application_id is None:
        return False
    try:
        await client.http.bulk_upsert_global_commands(client.application_id, COMMANDS)
    except discord.HTTPException as exc:  # the bot still works; only the command is missing
        log.warning("registering /%s failed: %s", NAME, exc)
        return False
    return True


async def on_command(
    interaction: discord.Interaction,
    ctx: ChannelContext,
    allowed: list[str],
    allowed_channels: list[str],
) -> None:
    """An INTERACTION_CREATE for `/switchboard` (other commands are left alone)."""
    data: dict[str, Any] = dict(interaction.data or {})
    if data.get("name") != NAME:
        return
    user = interaction.user
    sender = Sender(str(user.id), user.display_name or user.name)
    if not allowed_here(interaction, sender, allowed, allowed_channels):
        text = NOT_ALLOWED
    elif [o.get("name") for o in data.get("options") or []] == ["catchup"]:
        text = ctx.catchup_for(KIND, sender.id, link, room=MAX_TEXT)
    else:
        text = HELP
    await interaction.response.send_message(text, ephemeral=True)


def link(target: str) -> str:
    """A Discord target as Discord links it (`<#id>`: a thread's own id, else the
    channel's); others as written."""
    kind, _, rest = target.partition(":")
    if kind != KIND or not rest:
        return target
    channel, _, thread = rest.partition("/")
    return f"<#{thread or channel}>"
