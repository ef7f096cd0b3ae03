"""The fake Slack's `conversations.members` (a mixin of `FakeSlack`), as Slack documents
it: the user ids of a conversation's members, cursor-paged (`limit`, default 100, at
most 1000; `response_metadata.next_cursor`, empty on the last page). A channel's
members are those set in `members`, else the bot and everyone who posted in it; a DM
(`D<rest>`, as `conversations.open` names it) holds its user `U<rest>` and the bot.
An unknown channel (`CGONE...`), or a private one (`G...`) the bot was removed from,
answers `channel_not_found`, as Slack does for a conversation the token cannot see;
a public channel's members are listed whether or not the bot is in it.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.slack_history import _cursor, _decode
from tests.fakes.slack_ids import BOT_USER


class MembersApi:
    history: dict[str, list[dict[str, Any]]]
    removed: set[str]
    members: dict[str, list[str]]  # channel -> member user ids (set by a test)

    def channel_members(self, channel: str) -> list[str]:
        if channel in self.members:
            return list(self.members[channel])
        if channel.startswith("D"):
            return ["U" + channel[1:], BOT_USER]
        posters = [str(m["user"]) for m in self.history.get(channel, []) if m.get("user")]
        return [BOT_USER, *dict.fromkeys(p for p in posters if p != BOT_USER)]

    async def _conversations_members(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        channel = str(params.get("channel", ""))
        hidden = channel.startswith("G") and channel in self.removed
        if not channel or hidden or channel.startswith("CGONE"):
            return {"ok": False, "error": "channel_not_found"}, {}
        everyone = self.channel_members(channel)
        start = _decode(params)
        limit = max(1, min(int(params.get("limit") or 100), 1000))
        more = start + limit < len(everyone)
        return {
            "ok": True,
            "members": everyone[start : start + limit],
            "response_metadata": {"next_cursor": _cursor(start + limit) if more else ""},
        }, {}
