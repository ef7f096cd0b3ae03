"""The fake Slack's history methods, as Slack documents them (a mixin of `FakeSlack`).

`conversations.history` returns a channel's top-level messages (thread parents with
`reply_count` / `latest_reply`, and `thread_broadcast` replies), newest first;
`conversations.replies` the parent, then the replies oldest first (the parent leads
the first page whatever `oldest` says). Both are cursor-paged (`limit`, at most 999
here; `response_metadata.next_cursor`, empty on the last page, and `has_more`), take
`oldest` / `latest` (exclusive unless `inclusive`), and carry each message's
`metadata` only with `include_all_metadata`. A channel the bot was removed from
answers `not_in_channel`; an unknown one (`CGONE...`) `channel_not_found`.
`conversations.open` gives a user's DM channel.
"""

from __future__ import annotations

import base64
from typing import Any


class HistoryApi:
    history: dict[str, list[dict[str, Any]]]  # channel -> messages, oldest first
    removed: set[str]

    async def _conversations_open(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        users = str(params.get("users", ""))
        if not users.startswith("U"):
            return {"ok": False, "error": "user_not_found"}, {}
        return {"ok": True, "channel": {"id": "D" + users[1:]}}, {}

    async def _conversations_history(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        channel = str(params.get("channel", ""))
        refused = self._unreadable(channel)
        if refused:
            return refused, {}
        top = [
            m
            for m in self.history.get(channel, [])
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]
        chosen = list(reversed(_window(top, params)))  # newest first
        return self._page(chosen, params, lambda m: self._with_replies(channel, m)), {}

    async def _conversations_replies(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        channel, ts = str(params.get("channel", "")), str(params.get("ts", ""))
        refused = self._unreadable(channel)
        if refused:
            return refused, {}
        messages = self.history.get(channel, [])
        target = next((m for m in messages if m["ts"] == ts), None)
        if target is None:
            return {"ok": False, "error": "thread_not_found"}, {}
        root = str(target.get("thread_ts") or ts)
        parent = next((m for m in messages if m["ts"] == root), None)
        replies = [m for m in messages if m.get("thread_ts") == root and m["ts"] != root]
        chosen = _window(replies, params)  # oldest first
        if parent is not None and not params.get("cursor"):
            chosen.insert(0, parent)  # the parent leads the first page, whatever `oldest` says
        return self._page(chosen, params, lambda m: self._with_replies(channel, m)), {}

    def _unreadable(self, channel: str) -> dict[str, Any] | None:
        if channel in self.removed:
            return {"ok": False, "error": "not_in_channel"}
        if channel.startswith("CGONE"):
            return {"ok": False, "error": "channel_not_found"}
        return None

    def _with_replies(self, channel: str, message: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in message.items() if k != "channel"}
        if message.get("thread_ts") == message["ts"] or not message.get("thread_ts"):
            replies = [
                m for m in self.history.get(channel, []) if m.get("thread_ts") == message["ts"]
            ]
            replies = [m for m in replies if m["ts"] != message["ts"]]
            if replies:
                out.update(thread_ts=message["ts"], reply_count=len(replies))
                out["latest_reply"] = replies[-1]["ts"]
        return out

    @staticmethod
    def _page(messages: list[dict[str, Any]], params: dict[str, Any], show: Any) -> dict[str, Any]:
        start = _decode(params)
        limit = max(1, min(int(params.get("limit") or 100), 999))
        page = messages[start : start + limit]
        if not _truthy(params.get("include_all_metadata")):
            page = [{k: v for k, v in m.items() if k != "metadata"} for m in page]
        more = start + limit < len(messages)
        return {
            "ok": True,
            "messages": [show(m) for m in page],
            "has_more": more,
            "pin_count": 0,
            "response_metadata": {"next_cursor": _cursor(start + limit) if more else ""},
        }


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true")


def _window(messages: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages between `oldest` and `latest` (exclusive unless `inclusive`)."""
    inclusive = _truthy(params.get("inclusive"))
    oldest = float(params.get("oldest") or 0)
    latest = float(params.get("latest") or "inf")

    def inside(m: dict[str, Any]) -> bool:
        ts = float(m["ts"])
        if inclusive:
            return oldest <= ts <= latest
        return oldest < ts < latest

    return [m for m in messages if inside(m)]


def _cursor(offset: int) -> str:
    return base64.b64encode(f"next:{offset}".encode()).decode()


def _decode(params: dict[str, Any]) -> int:
    cursor = params.get("cursor")
    if not cursor:
        return 0
    return int(base64.b64decode(str(cursor)).decode().partition(":")[2])
