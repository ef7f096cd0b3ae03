"""Who is in a Slack conversation, for the scope check (bot/inbox/scope.py `Membership`).

`conversations.members` lists a channel's (or DM's) member ids, cursor-paged; a
person may read and post where they are a member. A user's own id as a target (a
DM by user id) is theirs. Slack's refusal (`channel_not_found` for a private channel
the bot is not in) or a failed call answers None: the scope then asks a person.
Posting restrictions of announcement channels are not looked up (members may post).
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Target

log = logging.getLogger(__name__)
PAGE = 1000
MAX_PAGES = 20


class SlackMembers:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def can_read(self, user_id: str, target: Target) -> bool | None:
        if target.address == user_id:
            return True
        members = await self.members(target.address)
        return None if members is None else user_id in members

    async def can_post(self, user_id: str, target: Target) -> bool | None:
        return await self.can_read(user_id, target)

    async def members(self, channel: str) -> set[str] | None:
        found: set[str] = set()
        cursor = ""
        for _ in range(MAX_PAGES):
            try:
                page = await self.client.conversations_members(
                    channel=channel, limit=PAGE, cursor=cursor or None
                )
            except (SlackApiError, SlackClientError) as exc:
                log.info("conversations.members %s refused: %s", channel, exc)
                return None
            found.update(str(m) for m in page.get("members") or [])
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                break
        return found
