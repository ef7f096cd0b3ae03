"""The Slack app manifest: every scope and event the code uses, for one bot's name.

docs/slack.md shows `render("Switchboard")`; tests/setup/test_manifest.py holds the
manifest to the Web API methods and events in channels/slack. JSON, which Slack's
"Create an app → From a manifest" takes as it takes YAML.
"""

from __future__ import annotations

import json
from typing import Any

#: bot scopes, each with what needs it (docs/slack.md explains them)
BOT_SCOPES = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "chat:write",
    "chat:write.customize",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "groups:read",
    "im:history",
    "im:read",
    "im:write",
    "mpim:history",
    "mpim:read",
    "reactions:write",
    "users:read",
    "users:read.email",
)

BOT_EVENTS = (
    "agent_session_stopped",
    "app_home_opened",
    "app_mention",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
)


def manifest(name: str = "Switchboard") -> dict[str, Any]:
    """The manifest of a Socket Mode app called `name`."""
    return {
        "display_information": {"name": name, "description": f"{name}: a chat-ops team bot"},
        "features": {
            "app_home": {
                "home_tab_enabled": True,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": name, "always_online": True},
            "assistant_view": {"assistant_description": name},
            "slash_commands": [
                {
                    "command": "/switchboard",
                    "description": "Status, catch up, a fresh conversation, help",
                    "usage_hint": "status | catchup | new | help",
                    "should_escape": False,
                }
            ],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": {"bot_events": list(BOT_EVENTS)},
            "interactivity": {"is_enabled": True},
            "socket_mode_enabled": True,
            "org_deploy_enabled": False,
            "token_rotation_enabled": False,
        },
    }


def render(name: str = "Switchboard") -> str:
    return json.dumps(manifest(name), indent=2, ensure_ascii=False)
