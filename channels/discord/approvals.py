"""Approval requests on Discord: Approve / Deny buttons (message components).

A request message (an outbound whose meta names an `approval_id`) is posted with two
buttons whose custom ids carry the approval's id. A click arrives as INTERACTION_CREATE;
it is answered at once (Discord wants an answer within 3 s): an approver's click
decides (the core records it once) and the answer updates the message (type 7) to
show who decided and when, without the buttons; anyone else, or a second click, gets
an ephemeral answer (flag 64) and nothing changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import discord

from bot.seam import Outbound, Sender
from channels.discord.events import DM_ENTRY

log = logging.getLogger(__name__)

APPROVE = "switchboard_approve:"
DENY = "switchboard_deny:"
NOT_ALLOWED = (
    "Only people allowed to talk to this bot, in its channels, can decide; nothing was changed."
)

Decide = Callable[[str, str, bool, Sender, str, bool], tuple[str, str]]


def is_request(msg: Outbound) -> bool:
    return bool(msg.meta.get("approval_id")) and not msg.meta.get("decision")


def request_view(approval_id: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(
        discord.ui.Button(
            label="Approve", style=discord.ButtonStyle.success, custom_id=APPROVE + approval_id
        )
    )
    view.add_item(
        discord.ui.Button(
            label="Deny", style=discord.ButtonStyle.danger, custom_id=DENY + approval_id
        )
    )
    return view


async def on_click(
    interaction: discord.Interaction,
    decide: Decide,
    allowed: list[str],
    allowed_channels: list[str] | None = None,
) -> None:
    """An INTERACTION_CREATE for one of our buttons (others are left alone): only from
    DISCORD_ALLOWED_USERS in DISCORD_ALLOWED_CHANNELS (a thread by its parent too)."""
    data: dict[str, Any] = dict(interaction.data or {})
    custom_id = str(data.get("custom_id", ""))
    if not custom_id.startswith((APPROVE, DENY)):
        return
    user = interaction.user
    sender = Sender(str(user.id), user.display_name or user.name)
    where = str(interaction.channel_id or "")
    if not allowed_here(interaction, sender, allowed, allowed_channels or []):
        await interaction.response.send_message(NOT_ALLOWED, ephemeral=True)
        return
    approve = custom_id.startswith(APPROVE)
    approval_id = custom_id.split(":", 1)[1]
    outcome, text = decide("discord", approval_id, approve, sender, where, True)
    if outcome != "decided":
        await interaction.response.send_message(text, ephemeral=True)
        return
    original = interaction.message.content if interaction.message is not None else ""
    await interaction.response.edit_message(content=f"{original}\n\n{text}"[:2000], view=None)


def allowed_here(
    interaction: discord.Interaction, sender: Sender, users: list[str], channels: list[str]
) -> bool:
    if users and sender.id not in users:
        return False
    if not channels:
        return True
    if interaction.guild_id is None:
        places = {DM_ENTRY, str(interaction.channel_id)}
    else:
        parent = getattr(interaction.channel, "parent_id", None)
        places = {str(interaction.channel_id)} | ({str(parent)} if parent else set())
    return bool(places & set(channels))


async def edit_request(client: discord.Client, msg: Outbound, channel_id: str) -> None:
    """A decision given by a reply: show it on the request message, without buttons."""
    message_id, original = str(msg.meta.get("edit") or ""), str(msg.meta.get("request") or "")
    if not (message_id.isdigit() and channel_id.isdigit()):
        return
    message = client.get_partial_messageable(int(channel_id)).get_partial_message(int(message_id))
    try:
        await message.edit(content=f"{original}\n\n{msg.text}"[:2000], view=None)
    except discord.HTTPException as exc:  # the notice in the thread says it anyway
        log.warning("editing approval request %s failed: %s", message_id, exc)
