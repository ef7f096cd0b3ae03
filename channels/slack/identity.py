"""Who the bot is in the workspace: `auth.test`, asked once when the channel starts.

The bot's user id tells mentions of it apart and its bot id tells its own posts
apart; the token's scopes (Slack's `X-OAuth-Scopes` header) tell whether posts may
carry a custom username (`chat:write.customize`) to show the speaking agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

CUSTOMIZE_SCOPE = "chat:write.customize"


@dataclass(frozen=True, slots=True)
class BotIdentity:
    user_id: str
    bot_id: str
    name: str
    team_id: str
    can_customize: bool

    def mentioned_in(self, text: str) -> bool:
        return f"<@{self.user_id}>" in text or f"<@{self.user_id}|" in text


async def whoami(client: AsyncWebClient) -> BotIdentity:
    """Ask Slack who the token belongs to; raises slack_sdk errors as they come."""
    response = await client.auth_test()
    scopes = header(response.headers, "x-oauth-scopes")
    return BotIdentity(
        user_id=str(response.get("user_id", "")),
        bot_id=str(response.get("bot_id", "")),
        name=str(response.get("user", "switchboard")),
        team_id=str(response.get("team_id", "")),
        can_customize=CUSTOMIZE_SCOPE in [s.strip() for s in scopes.split(",")],
    )


def header(headers: Mapping[str, object], name: str) -> str:
    """A response header by its lower-case name ('' if absent); list values joined."""
    for key, value in headers.items():
        if key.lower() == name:
            return ",".join(value) if isinstance(value, list) else str(value)
    return ""
