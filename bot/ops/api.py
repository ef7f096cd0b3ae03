"""The HTTP API: programs (CI, webhooks, alerting) talk to the bot like a person.

`POST /api/messages` with `Authorization: Bearer <token>` and JSON `{"text": ...,
"conversation"?: ..., "sender"?: ...}` is journaled and routed by the same rules as a
person's message (one transaction, before the 202), the caller speaking as
`api:<name>` (SWITCHBOARD_API_TOKEN names the callers, config/callers.py). An
`Idempotency-Key` header makes a retried post the same message: journaled and
answered once. `GET /api/messages/<id>` returns the replies it got so far.

`conversation` is a name of the caller's own (`deploys`: one conversation the caller
can come back to) or a delivery target listed for it in SWITCHBOARD_API_TARGETS, or a
thread of a channel listed (`slack:CDEPLOYS`, `slack:CDEPLOYS/1700.1`: the message is
taken in there and answered there); without it every
message starts its own. A caller is bound to what it started: a DM, a thread or an
address not listed for it is refused (403, and an audit line), and `GET` returns only
the replies of that message's own conversation. Answers to the caller's own
conversations are kept by the `api` channel below, never sent anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.core.channel import BaseChannel
from bot.core.messages import DeliveryReceipt, Inbound, Outbound, Sender, Target, TargetError
from bot.inbox.places import same_place
from bot.ops.desk import OpsView
from bot.ops.server import Handler, Route

KIND = "api"
MAX_TEXT_CHARS = 40_000  # Slack's own limit for one message
#: the longest text in JSON's widest spelling (`\ud83d\ude00`: 12 bytes a character), and room
MAX_BODY_BYTES = 12 * MAX_TEXT_CHARS + 64 * 1024
MAX_REPLIES = 200
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
NO_STORE = {"Cache-Control": "no-store"}
Endpoint = Callable[[web.Request, str], Awaitable[tuple[int, dict[str, Any]]]]


class ApiChannel(BaseChannel):
    """Delivers answers to the API's own conversations: the outbox row is the reply,
    read back by `GET /api/messages/<id>`."""

    kind = KIND
    pace_seconds = 0.0

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        return DeliveryReceipt(platform_id=msg.id)


class Problem(Exception):
    """A request the API refuses: its status and the sentence the caller reads."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


class Api:
    def __init__(
        self,
        view: OpsView,
        callers: dict[str, str],
        targets: dict[str, frozenset[str]] | None = None,
    ) -> None:
        self.view = view
        self._callers = {token.encode(): name for token, name in callers.items()}
        #: per caller, the places besides its own conversations it may post into (a listed
        #: channel's threads too, as a person in the channel sees them)
        self.targets = {c: [Target.parse(t) for t in ts] for c, ts in (targets or {}).items()}

    def routes(self) -> list[Route]:
        return [
            ("POST", "/api/messages", self._answering(self.post)),
            ("GET", "/api/messages/{id}", self._answering(self.get)),
        ]

    def _answering(self, handler: Endpoint) -> Handler:
        async def answer(request: web.Request) -> web.StreamResponse:
            try:
                status, body = await handler(request, self.caller(request))
            except Problem as problem:
                status, body = problem.status, {"error": problem.error}
            return web.json_response(body, status=status, headers=NO_STORE)

        return answer

    def caller(self, request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        given = header[7:].strip().encode() if header[:7].lower() == "bearer " else b""
        found = None
        for token, name in self._callers.items():  # every token compared: no early exit
            if hmac.compare_digest(given, token):
                found = name
        if found is None:
            raise Problem(401, "Authorization: Bearer <SWITCHBOARD_API_TOKEN> required")
        return found

    # -- POST /api/messages ------------------------------------------------------------
    async def post(self, request: web.Request, caller: str) -> tuple[int, dict[str, Any]]:
        body = await _json_body(request)
        text = _text(body)
        message_id = _message_id(caller, request.headers.get("Idempotency-Key"))
        reply_to = _place(caller, body.get("conversation"), message_id)
        if reply_to.kind not in self.view.outbox_kinds:
            raise Problem(400, f'"conversation": no {reply_to.kind} channel is configured')
        listed = self.targets.get(caller, [])
        if reply_to.kind != KIND and not any(same_place(reply_to, t) for t in listed):
            self._refused(caller, reply_to)
        msg = Inbound(
            channel=KIND,
            message_id=message_id,
            conversation=str(reply_to),
            sender=Sender(f"api:{caller}", _sender(caller, body.get("sender"))),
            text=text,
            reply_to=reply_to,
            meta={"caller": caller},
        )
        fresh = self.view.acts.take_in(msg)
        self.view.events.emit(
            "operator.action", KIND, action="api_message", decider=f"api:{caller}", how="api",
            conversation=msg.conversation, outcome="accepted" if fresh else "duplicate",
        )  # fmt: skip
        return 202, {
            "id": message_id,
            "conversation": msg.conversation,
            "replies": f"/api/messages/{message_id}",
        }

    def _refused(self, caller: str, place: Target) -> None:
        self.view.events.emit(
            "access.refused", KIND, conversation=str(place), person=f"api:{caller}",
            person_id=f"api:{caller}", action="api_message", resource=str(place),
            outcome="refused",
        )  # fmt: skip
        raise Problem(
            403,
            f'"conversation": api:{caller} may post only into its own conversations (a name) '
            f"or a target SWITCHBOARD_API_TARGETS lists for it, and {place} is neither",
        )

    # -- GET /api/messages/<id> --------------------------------------------------------
    async def get(self, request: web.Request, caller: str) -> tuple[int, dict[str, Any]]:
        message_id = request.match_info["id"]
        msg = self.view.store.views.inbound_message(KIND, message_id)
        if msg is None or msg.meta.get("caller") != caller:
            raise Problem(404, f"no message {message_id} from api:{caller}")
        said = self.view.store.views.said_to(str(msg.reply_to), msg.received_at, MAX_REPLIES)
        replies = [  # this message's conversation only: not other threads of that target
            _reply(status, out) for status, out in said
            if out.kind != "failure" and out.conversation == msg.conversation
        ]  # fmt: skip
        return 200, {
            "id": message_id,
            "conversation": msg.conversation,
            "received_at": msg.received_at,
            "replies": replies,
        }


async def _json_body(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise _too_large()
    raw = await _read_at_most(request, MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise _too_large()
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Problem(400, f"the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise Problem(400, 'the body must be a JSON object: {"text": "..."}')
    return body


async def _read_at_most(request: web.Request, limit: int) -> bytes:
    """The body up to `limit` bytes (one `read` returns only what has arrived)."""
    raw = bytearray()
    while len(raw) < limit and (chunk := await request.content.read(limit - len(raw))):
        raw += chunk
    return bytes(raw)


def _too_large() -> Problem:
    return Problem(413, f"the message is too long: at most {MAX_TEXT_CHARS} characters of text")


def _text(body: dict[str, Any]) -> str:
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise Problem(400, '"text" is required: a non-empty string')
    if len(text) > MAX_TEXT_CHARS:
        raise _too_large()
    return text


def _sender(caller: str, given: object) -> str:
    if given is None:
        return f"api:{caller}"
    if not isinstance(given, str) or not given.strip() or len(given) > 80:
        raise Problem(400, '"sender" must be a short name (at most 80 characters)')
    return given.strip()  # the transcript names the caller beside it: `name (api:ci)`


def _message_id(caller: str, key: str | None) -> str:
    if not key:
        return uuid.uuid4().hex
    return hashlib.sha256(f"{caller}\n{key}".encode()).hexdigest()[:32]


def _place(caller: str, given: object, message_id: str) -> Target:
    """Where the message is taken in and answered."""
    if given is None:
        return Target(KIND, caller, message_id)
    if not isinstance(given, str) or not given.strip():
        raise Problem(400, '"conversation" must be a delivery target or a name')
    if ":" in given or given.strip() == "terminal":
        try:
            target = Target.parse(given)
        except TargetError as exc:
            raise Problem(400, f'"conversation": {exc}') from exc
        if target.kind == KIND and target.address != caller:
            raise Problem(400, f'"conversation": api:{target.address} is not yours')
        return target
    if not _NAME.match(given):
        raise Problem(400, '"conversation" names may hold letters, digits, . _ - (max 80)')
    return Target(KIND, caller, given)


def _reply(status: str, out: Outbound) -> dict[str, Any]:
    return {
        "id": out.id,
        "from": out.agent,
        "kind": out.kind,
        "text": out.text,
        "status": status,
    }
