"""The fake Slack's slash commands and App Home (a mixin of `FakeSlack`).

A person types `/switchboard <text>`: Slack sends a `slash_commands` envelope over
Socket Mode (the app's ack may carry the response: `{"text": ...}`), or in HTTP mode
POSTs the command's fields form-encoded to the request URL (the 200's body is the
response). Slack shows an error to the person if no ack comes within 3 seconds. A
person opening the bot's Home tab sends `app_home_opened`; the app answers with
`views.publish` (user_id, view of type `home`).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_ids import APP_ID, TEAM

if TYPE_CHECKING:
    from tests.fakes.slack_events import Envelope

ACK_SECONDS = 3.0  # Slack's limit for a slash command's acknowledgement


class CommandsApi:
    def slash(
        self, text: str, user: str = "UANN", channel: str = "D1", command: str = "/switchboard"
    ) -> Envelope:
        body = {
            "token": "verification-token",
            "team_id": TEAM,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": "directmessage" if channel.startswith("D") else "ops",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": f"{self.api_url}commands/{uuid.uuid4().hex}",  # type: ignore[attr-defined]
            "trigger_id": f"{self.next_ts()}.trigger",  # type: ignore[attr-defined]
        }
        return self._call(self._send(body, "slash_commands"))  # type: ignore[attr-defined,no-any-return]

    def open_home(self, user: str = "UANN") -> Envelope:
        event = {
            "type": "app_home_opened",
            "user": user,
            "channel": "D1",
            "tab": "home",
            "event_ts": self.next_ts(),  # type: ignore[attr-defined]
        }
        return self.send_event(event)  # type: ignore[attr-defined,no-any-return]

    async def _views_publish(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        user = str(params.get("user_id", ""))
        view = params.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not user or not isinstance(view, dict) or view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments"}, {}
        if len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_blocks"}, {}
        self.home_views[user] = view
        self._notify()  # type: ignore[attr-defined]
        return {"ok": True, "view": {"id": "V1", **view}}, {}
