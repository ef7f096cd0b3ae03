"""`POST /hooks/<name>`: signed webhooks from Alertmanager, GitHub, PagerDuty and any
system, taken in on the operator HTTP server (docs/hooks.md).

A request is answered in milliseconds and nothing of it reaches a model before it is
verified: an unknown name is 404, a body over `MAX_BODY_BYTES` 413, a bad or missing
signature (or a stale `X-Timestamp`) 401, a body that is not a JSON object 400, each
with an audit line (`access.refused`). A verified delivery is journaled (the inbound
journal, channel `hook`, deduplicated by the delivery's id: bot/ops/hooks_verify.py)
with its audit line in the same commit, then answered 202; one seen before is answered
200 and not handled again. The agent's work comes after, from the journal
(bot/ops/hooks_desk.py), so a crash after the answer loses nothing.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import Counter, Histogram

from bot.core.messages import Inbound, Sender, Target
from bot.ops.api import _read_at_most
from bot.ops.desk import OpsView
from bot.ops.hooks_verify import Refused, delivery_id, verify
from bot.ops.hooks_view import View, digest, view
from bot.ops.server import Route
from config.hooks import HookConfig

if TYPE_CHECKING:
    from bot.ops.hooks_desk import HookDesk

#: the inbound journal's channel for hook deliveries, and its open status
CHANNEL = "hook"
MAX_BODY_BYTES = 1024 * 1024
NO_STORE = {"Cache-Control": "no-store"}
#: receipt to 2xx, in seconds
ACK_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)


class HookMetrics:
    """Deliveries, refusals and receipt-to-answer / receipt-to-post latency."""

    def __init__(self, registry: Any) -> None:
        self.deliveries = Counter(
            "switchboard_hook_deliveries", "Hook deliveries taken in", ["hook", "outcome"],
            registry=registry,
        )  # fmt: skip
        self.rejections = Counter(
            "switchboard_hook_rejections", "Hook requests refused", ["hook", "status"],
            registry=registry,
        )  # fmt: skip
        self.ack_seconds = Histogram(
            "switchboard_hook_ack_seconds", "Hook receipt to its HTTP answer",
            buckets=ACK_BUCKETS, registry=registry,
        )  # fmt: skip
        self.post_seconds = Histogram(
            "switchboard_hook_post_seconds", "Hook receipt to the agent's first post",
            ["hook"], buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=registry,
        )  # fmt: skip


class Hooks:
    def __init__(self, ops: OpsView, desk: HookDesk, metrics: HookMetrics) -> None:
        self.ops = ops
        self.desk = desk
        self.metrics = metrics
        self.configs = {h.name: h for h in ops.settings.hooks if h.enabled}

    def routes(self) -> list[Route]:
        return [("POST", "/hooks/{name}", self.receive)]

    async def receive(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        name = request.match_info["name"]
        try:
            status, body = await self._take(request, name)
        except Refused as problem:
            status, body = problem.status, {"error": problem.reason}
            self._refused(name, problem)
        self.metrics.ack_seconds.observe(time.perf_counter() - started)
        return web.json_response(body, status=status, headers=NO_STORE)

    async def _take(self, request: web.Request, name: str) -> tuple[int, dict[str, Any]]:
        hook = self.configs.get(name)
        if hook is None:
            raise Refused(404, f"no hook named {name[:40]!r} is configured ([[hooks]])")
        raw = await _body(request)
        verify(hook.kind, hook.secret.get_secret_value(), request.headers, raw)
        event = request.headers.get("X-GitHub-Event", "")
        if hook.kind == "github" and event == "ping":
            return 200, {"ok": "pong"}
        payload = _json(raw)
        delivery = delivery_id(hook.kind, request.headers, payload)
        seen = view(hook.kind, event, payload, hook.max_alerts)
        msg = _inbound(hook, delivery, seen, event)
        inbound_id = self._journal(hook, msg, wanted=_wanted(hook, seen))
        self.metrics.deliveries.labels(name, "accepted" if inbound_id else "duplicate").inc()
        if inbound_id is None:
            return 200, {"id": msg.message_id, "duplicate": True}
        if inbound_id > 0 and self.ops.leading():  # else the leader finds it in the journal
            self.desk.offer(inbound_id, msg)
        return 202, {"id": msg.message_id, "conversation": msg.conversation}

    def _journal(self, hook: HookConfig, msg: Inbound, wanted: bool) -> int | None:
        """The delivery and its audit line in one commit: its journal id (0 when the
        filter leaves it alone), None when it was seen before."""
        store = self.ops.store
        with store.tx():
            inbound_id = store.journal(msg, status="hook" if wanted else "routed")
            fresh = inbound_id is not None
            if fresh and wanted:
                store.notify(CHANNEL)  # a follower's: wakes the leader's desk
            self.ops.events.emit(
                "operator.action", f"hook:{hook.name}", action="hook_delivery",
                decider=f"hook:{hook.name}", how=hook.kind, conversation=msg.conversation,
                outcome=("accepted" if wanted else "filtered") if fresh else "duplicate",
            )  # fmt: skip
        return None if inbound_id is None else (inbound_id if wanted else 0)

    def _refused(self, name: str, problem: Refused) -> None:
        known = name if name in self.configs else "(unknown)"
        self.metrics.rejections.labels(known, str(problem.status)).inc()
        self.ops.events.emit(
            "access.refused", f"hook:{known}", person=f"hook:{known}", person_id=None,
            action="hook_delivery", resource=f"/hooks/{name[:80]}",
            outcome=f"refused {problem.status}: {problem.reason}",
        )  # fmt: skip


async def _body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise Refused(413, f"the body is over {MAX_BODY_BYTES} bytes")
    raw = await _read_at_most(request, MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise Refused(413, f"the body is over {MAX_BODY_BYTES} bytes")
    return raw


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(400, f"the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    return body


def _wanted(hook: HookConfig, seen: View) -> bool:
    """The hook's `filter`: every key equals the delivery's field (case-insensitive)."""
    return all(
        seen.fields.get(k, "").casefold() == str(v).casefold() for k, v in hook.filter.items()
    )


def conversation_of(hook: str, group: str) -> str:
    """The hook's own conversation for a group (or one delivery)."""
    return f"hook:{hook}/{digest(group)}"


def _inbound(hook: HookConfig, delivery: str, seen: View, event: str) -> Inbound:
    return Inbound(
        channel=CHANNEL,
        message_id=f"{hook.name}/{delivery}",
        conversation=conversation_of(hook.name, seen.group or delivery),
        sender=Sender(f"hook:{hook.name}", hook.name, is_bot=True),
        text="",  # the view is rendered for the model when handed over, not on this path
        reply_to=Target.parse(hook.deliver_to),
        meta={
            "hook": hook.name,
            "kind": hook.kind,
            "event": event,
            "group": seen.group,
            "fields": seen.fields,
            "view": seen.data,
            "delivery": delivery[:200],
        },
    )
