"""The fake Slack's interactivity (a mixin of `FakeSlack`): a person's click on a
Block Kit button arrives as a `block_actions` payload (an `interactive` envelope over
Socket Mode, a form-encoded POST in HTTP mode); chat.update edits a posted message and
chat.postEphemeral records a private note.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_ids import APP_ID, TEAM

if TYPE_CHECKING:
    from tests.fakes.slack_events import Envelope


class InteractiveApi:
    def click(self, message: dict[str, Any], action_id: str, user: str = "UANN") -> Envelope:
        """A person clicks a button of a posted message: a `block_actions` payload (an
        `interactive` envelope over Socket Mode, a form-encoded POST in HTTP mode)."""
        button = next(
            e
            for b in message.get("blocks") or []
            for e in b.get("elements") or []
            if e.get("action_id") == action_id
        )
        payload = {
            "type": "block_actions",
            "team": {"id": TEAM, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
            "api_app_id": APP_ID,
            "token": "verification-token",
            "container": {
                "type": "message",
                "message_ts": message["ts"],
                "channel_id": message["channel"],
                "is_ephemeral": False,
            },
            "trigger_id": f"{self.next_ts()}.trigger",
            "channel": {"id": message["channel"], "name": "ops"},
            "message": {k: v for k, v in message.items() if k not in ("metadata",)},
            "response_url": f"{self.api_url}response/{uuid.uuid4().hex}",
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": next(
                        b.get("block_id") for b in message["blocks"] if b["type"] == "actions"
                    ),
                    "text": button["text"],
                    "value": button["value"],
                    "style": button.get("style"),
                    "action_ts": self.next_ts(),
                }
            ],
        }
        return self._call(self._send(payload, "interactive"))

    async def _chat_update(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        channel, ts = str(params.get("channel", "")), str(params.get("ts", ""))
        for message in [*self.posts, *self.streams.values()]:  # type: ignore[attr-defined]
            if message["channel"] == channel and message["ts"] == ts:
                message.update(
                    {k: v for k, v in params.items() if k in ("text", "blocks", "metadata")},
                    edited=True,
                )
                if isinstance(message.get("metadata"), str):
                    message["metadata"] = json.loads(message["metadata"])
                self.updates.append(dict(params))
                self._notify()
                return {"ok": True, "channel": channel, "ts": ts, "text": params.get("text")}, {}
        return {"ok": False, "error": "message_not_found"}, {}

    async def _chat_postEphemeral(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        if not params.get("user") or not params.get("channel"):
            return {"ok": False, "error": "user_not_in_channel"}, {}
        self.ephemerals.append(dict(params))
        self._notify()
        return {"ok": True, "message_ts": self.next_ts()}, {}
