"""`read_channel` for Slack: a channel's top level (`conversations.history`) or a thread
(`conversations.replies`), newest `limit` messages since a time, user ids resolved to
names with `users.info` once per user (cached for the process). Needs the
`channels:history` (`groups:history`, `im:history`) and `users:read` scopes, and the
bot in the channel; Slack's refusal comes back as a sentence for the model.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Line, Page, ReadRefused, Target
from channels.slack.history import PAGE, HistoryError, read

#: display names of Slack users held for the process (one users.info call each)
NAMES_MAX = 5_000
HINTS = {
    "not_in_channel": "the bot is not in that channel: invite it (/invite @bot)",
    "channel_not_found": "no such channel, or the bot cannot see it",
    "thread_not_found": "no such thread in that channel",
    "missing_scope": "the app lacks a history scope (channels:history, groups:history)",
}


class SlackReader:
    def __init__(self, client: AsyncWebClient, bot_name: str = "Switchboard") -> None:
        self.client = client
        self.bot_name = bot_name
        #: user id -> display name; bounded: NAMES_MAX, the oldest forgotten (read again)
        self.names: dict[str, str] = {}

    async def read_history(self, target: Target, since: float | None, limit: int) -> Page:
        args: dict[str, Any] = {"channel": target.address}
        if since is not None:
            args["oldest"] = f"{since:.6f}"
        method = "conversations.history"
        if target.thread:
            method, args["ts"] = "conversations.replies", target.thread
        found: list[dict[str, Any]] = []
        try:
            async for message in read(
                self.client, method, patient=True, max_pages=limit // PAGE + 2, **args
            ):
                found.append(message)
        except HistoryError as exc:
            raise ReadRefused(f"Slack refused to read {target}: {_hint(exc.error)}") from exc
        found.sort(key=lambda m: float(m.get("ts") or 0))
        cut = len(found) > limit
        return Page([await self._line(m) for m in found[-limit:]], cut)

    async def _line(self, message: dict[str, Any]) -> Line:
        files = [str(f.get("name") or f.get("title") or "file") for f in message.get("files") or []]
        return Line(float(message.get("ts") or 0), await self._who(message), _text(message), files)

    async def _who(self, message: dict[str, Any]) -> str:
        if message.get("bot_id"):
            return str(message.get("username") or self.bot_name)
        user = str(message.get("user") or "")
        if not user:
            return "someone"
        name = self.names.get(user)
        if name is None:
            name = self.names[user] = await self._name(user)
            if len(self.names) > NAMES_MAX:
                del self.names[next(iter(self.names))]
        return name

    async def _name(self, user: str) -> str:
        try:
            info = await self.client.users_info(user=user)
        except (SlackApiError, SlackClientError):
            return user  # users:read missing or the user gone: the id still says who
        profile = (info.get("user") or {}).get("profile") or {}
        real = (info.get("user") or {}).get("real_name")
        return str(profile.get("display_name") or profile.get("real_name") or real or user)


def _text(message: dict[str, Any]) -> str:
    text = str(message.get("text") or "")
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _hint(error: str) -> str:
    return f"{error} ({HINTS[error]})" if error in HINTS else error
