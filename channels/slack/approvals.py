"""Approval requests on Slack: Block Kit Approve / Deny buttons, and their clicks.

A request message (an outbound whose meta names an `approval_id`) is posted with the
text in a section and two buttons carrying the approval's id. A click arrives as a
`block_actions` interactive payload (a Socket Mode `interactive` envelope, or a signed
form-encoded `payload` POST in HTTP mode); bolt acks it at once. An approver's click
decides (the core records it once); the decision notice the core then sends updates the
request message with `chat.update` (who decided and when, no buttons), for a click as for
a thread reply; anyone else, or a second click, gets a private note
(`chat.postEphemeral`) and nothing changes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import Outbound, Sender
from channels.slack.format import to_mrkdwn

log = logging.getLogger(__name__)

APPROVE = "switchboard_approve"
DENY = "switchboard_deny"
ACTIONS = re.compile(f"^({APPROVE}|{DENY})$")
SECTION_MAX = 3000  # Slack's limit for a section's text
NOT_ALLOWED = "Only people allowed to talk to this bot can decide; nothing was changed."

Decide = Callable[[str, str, bool, Sender, str], tuple[str, str]]


def is_request(msg: Outbound) -> bool:
    return bool(msg.meta.get("approval_id")) and not msg.meta.get("decision")


def request_blocks(text: str, approval_id: str) -> list[dict[str, Any]]:
    return [
        _section(text),
        {
            "type": "actions",
            "block_id": f"approval-{approval_id}",
            "elements": [
                _button("Approve", APPROVE, approval_id, "primary"),
                _button("Deny", DENY, approval_id, "danger"),
            ],
        },
    ]


def decided_blocks(text: str, decision: str) -> list[dict[str, Any]]:
    return [_section(text), {"type": "context", "elements": [_mrkdwn(decision)]}]


def register(app: AsyncApp, client: AsyncWebClient, decide: Decide, allowed: list[str]) -> None:
    async def on_click(body: dict[str, Any], action: dict[str, Any], ack: AsyncAck) -> None:
        await ack()  # within Slack's 3 s, before anything else
        user = body.get("user") or {}
        sender = Sender(
            str(user.get("id", "")), str(user.get("name") or user.get("username") or "")
        )
        container = body.get("container") or {}
        channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id", ""))
        ts = str(container.get("message_ts") or "")
        if allowed and sender.id not in allowed:
            await _private(client, channel, sender.id, NOT_ALLOWED, ts)
            return
        approve = action.get("action_id") == APPROVE
        outcome, text = decide("slack", str(action.get("value", "")), approve, sender, channel)
        if outcome != "decided":
            await _private(client, channel, sender.id, text, ts)
            return
        # decided: the decision notice, through the outbox, updates this message
        # (edit_request below), whichever way the decision was given

    app.action(ACTIONS)(on_click)


async def edit_request(client: AsyncWebClient, msg: Outbound, channel: str) -> None:
    """A decision notice: also show the decision on the request message itself."""
    ts, original = str(msg.meta.get("edit") or ""), str(msg.meta.get("request") or "")
    if not ts:
        return
    try:
        shown, decision = to_mrkdwn(original), to_mrkdwn(msg.text)
        await client.chat_update(
            channel=channel, ts=ts, text=f"{shown}\n{decision}",
            blocks=decided_blocks(shown, decision),
        )  # fmt: skip
    except SlackApiError as exc:  # the notice in the thread says it anyway
        log.warning("chat.update of approval %s failed: %s", msg.meta.get("approval_id"), exc)


async def _private(client: AsyncWebClient, channel: str, user: str, text: str, ts: str) -> None:
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SlackApiError as exc:
        log.warning("ephemeral note to %s failed: %s", user, exc)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text[:SECTION_MAX])}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def _button(label: str, action_id: str, value: str, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label},
        "style": style,
        "value": value,
    }
