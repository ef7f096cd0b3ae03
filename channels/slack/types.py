"""Raw Slack payloads as they arrive (Events API / Socket Mode), typed once at the edge.

Only the fields Switchboard reads are listed; Slack sends more. Everything is
optional (`total=False`) because a malformed or unexpected event must be refused
cleanly, never crash the dispatcher.
"""

from __future__ import annotations

from typing import TypedDict

#: Slack message metadata `event_type` of every message the outbox delivered (post.py,
#: live.py): its payload names the outbox row and part, to find it again after a crash
METADATA_TYPE = "switchboard_outbox"


class SlackMessage(TypedDict, total=False):
    """A `message` / `app_mention` event, or the `message` inside `message_changed`."""

    type: str
    subtype: str
    channel: str
    channel_type: str  # "channel", "group", "im", "mpim"
    user: str
    bot_id: str
    text: str
    ts: str
    thread_ts: str
    event_ts: str
    user_profile: dict[str, str]
    files: list[dict[str, object]]


class SlackEdit(SlackMessage, total=False):
    """`message` with subtype `message_changed` or `message_deleted`."""

    message: SlackMessage
    previous_message: SlackMessage
    deleted_ts: str


class EventCallback(TypedDict, total=False):
    """The body of an Events API delivery (`event_callback`)."""

    type: str
    team_id: str
    event_id: str
    event: SlackEdit
