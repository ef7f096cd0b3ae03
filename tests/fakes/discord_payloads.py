"""Raw Discord payloads for the fake: users, the guild, channels, threads, messages.

The shapes follow the Discord API v10 objects that discord.py parses (snowflakes as
strings, ISO timestamps, `"flags": 0` on members). Only the fields discord.py reads.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

Payload = dict[str, Any]

TEXT, DM, PUBLIC_THREAD = 0, 1, 11
VIEW_CHANNEL = 1 << 10  # the permission bit a member overwrite denies to hide a channel
BOT_ID = 900000000000000001
GUILD_ID = 900000000000000100
GENERAL = 900000000000000200  # a guild text channel
RANDOM = 900000000000000201  # another guild text channel
ANN = 900000000000001001
BOB = 900000000000001002
ROBOT = 900000000000001003  # another bot in the guild

_DISCORD_EPOCH_MS = 1420070400000
_last_snowflake = 0
_snowflake_lock = threading.Lock()


def snowflake() -> int:
    """A new id as Discord makes them: milliseconds since Discord's epoch in the high
    bits (so an id tells when it was made), unique and increasing."""
    global _last_snowflake
    with _snowflake_lock:
        made = (int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22
        _last_snowflake = max(made, _last_snowflake + 1)
        return _last_snowflake


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def user(uid: int, name: str, bot: bool = False) -> Payload:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
        "bot": bot,
    }


USERS: dict[int, Payload] = {
    BOT_ID: user(BOT_ID, "switchboard", bot=True),
    ANN: user(ANN, "ann"),
    BOB: user(BOB, "bob"),
    ROBOT: user(ROBOT, "otherbot", bot=True),
}


def member(uid: int) -> Payload:
    return {
        "user": USERS[uid],
        "roles": [],
        "joined_at": now_iso(),
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def text_channel(cid: int, name: str) -> Payload:
    return {
        "id": str(cid),
        "type": TEXT,
        "guild_id": str(GUILD_ID),
        "name": name,
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
    }


def thread(tid: int, parent: int, name: str, owner: int) -> Payload:
    return {
        "id": str(tid),
        "type": PUBLIC_THREAD,
        "guild_id": str(GUILD_ID),
        "parent_id": str(parent),
        "owner_id": str(owner),
        "name": name,
        "member_count": 1,
        "message_count": 0,
        "total_message_sent": 0,
        "rate_limit_per_user": 0,
        "last_message_id": None,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": now_iso(),
            "locked": False,
        },
    }


def dm_channel(cid: int, recipient: int) -> Payload:
    return {"id": str(cid), "type": DM, "recipients": [USERS[recipient]], "last_message_id": None}


def guild(channels: list[Payload], threads: list[Payload]) -> Payload:
    everyone = {
        "id": str(GUILD_ID),
        "name": "@everyone",
        "permissions": "137411140509249",
        "position": 0,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
    }
    return {
        "id": str(GUILD_ID),
        "name": "Team",
        "icon": None,
        "owner_id": str(ANN),
        "unavailable": False,
        "member_count": len(USERS),
        "large": False,
        "features": [],
        "roles": [everyone],
        "emojis": [],
        "stickers": [],
        "channels": channels,
        "threads": threads,
        "members": [member(uid) for uid in USERS],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "premium_tier": 0,
        "mfa_level": 0,
        "verification_level": 0,
        "explicit_content_filter": 0,
        "default_message_notifications": 0,
        "preferred_locale": "en-US",
        "system_channel_flags": 0,
        "nsfw_level": 0,
    }


def message(
    mid: int,
    channel: Payload,
    author: int,
    content: str,
    *,
    mentions: list[int] | None = None,
    reference: int | None = None,
    attachments: list[Payload] | None = None,
    kind: int = 0,
) -> Payload:
    data: Payload = {
        "id": str(mid),
        "channel_id": channel["id"],
        "author": USERS[author],
        "content": content,
        "timestamp": now_iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [USERS[u] for u in mentions or []],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": kind,
        "flags": 0,
    }
    if "guild_id" in channel:
        data["guild_id"] = channel["guild_id"]
        data["member"] = {k: v for k, v in member(author).items() if k != "user"}
    if reference is not None:
        data["message_reference"] = {"message_id": str(reference), "channel_id": channel["id"]}
    return data


def application() -> Payload:
    return {
        "id": str(BOT_ID),
        "name": "Switchboard",
        "description": "",
        "icon": None,
        "bot_public": True,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "owner": USERS[ANN],
        "team": None,
        "flags": 0,
    }
