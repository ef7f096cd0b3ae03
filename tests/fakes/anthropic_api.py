"""A fake Anthropic Messages API on 127.0.0.1 that tests script per case.

It runs in its own thread with its own event loop (a `ThreadedServer`), so the same
fake serves an app in the test's loop and a `switchboard` subprocess. The real
anthropic SDK talks to it over HTTP. A test sets `responder`, a function of the
parsed `Call` that returns content blocks (see `text` and `tool`) or a full `Reply`;
it may be async. `fail` queues HTTP errors (a 529 storm). Every request is recorded
in `calls`.

Every request is checked against what the real API refuses (tests/fakes/anthropic_rules.py):
a request it would refuse gets a 400 here too and is kept in `violations`, which the
`fake` fixture turns into a test failure. A `Reply` may set `stop_reason` (`max_tokens`,
`refusal`, `pause_turn`...) and `stop_details` to script the model's habits
(tests/fakes/model_habits.py).

The fake plays each model as it behaves today (`models`, tests/fakes/anthropic_models.py;
`GET /v1/models/{id}` describes them): a thinking model's answer opens with a signed
thinking block, which must come back unmodified within a tool-use cycle
(tests/fakes/anthropic_thinking.py). A test that scripts its own thinking uses
`thinking` and `redacted`; one about something else may set `thinks = False`.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_models import MODELS, ModelSpec, model_info, spec_for
from tests.fakes.anthropic_rules import problems
from tests.fakes.anthropic_stream import stream
from tests.fakes.anthropic_thinking import Answer, Ledger
from tests.fakes.kept import Kept
from tests.fakes.threaded import ThreadedServer

_ids = itertools.count(1)
CLOCK = "[Now: "  # how the runtime's date-and-time line starts (bot/core/clock.py)
CONTEXT = "[Context for this turn]"  # profiles, memory since (agents/loop/transcript.py)
#: the delimiter lines of an untrusted block (agents/loop/marking.py), left out of `last_text`
DELIMITER = re.compile(r"^(?:<untrusted source=\"[^\n]*\">|</untrusted>)(?:\n|$)", re.MULTILINE)


def unwrap(s: str) -> str:
    """`s` without the delimiter lines of the runtime's untrusted blocks: what was said."""
    return DELIMITER.sub("", s).strip("\n")


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def tool(name: str, /, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": name, "input": args}


def thinking(s: str) -> dict[str, Any]:
    """A scripted thinking block; the fake signs it (and empties it when `display` is
    `omitted`) as the model would."""
    return {"type": "thinking", "thinking": s}


def redacted() -> dict[str, Any]:
    """A scripted redacted_thinking block; the fake fills its encrypted `data`."""
    return {"type": "redacted_thinking"}


@dataclass
class Reply:
    content: list[dict[str, Any]]
    status: int = 200
    delay: float = 0.0
    #: None: `tool_use` when the content calls a tool, else `end_turn`
    stop_reason: str | None = None
    #: the error message of a scripted 4xx (a 400 names what the API refused)
    error: str = "scripted"
    #: streamed answers: seconds between two text deltas, and characters per delta
    pace: float = 0.0
    piece: int = 20
    #: why the model stopped, e.g. {"type": "refusal", "category": "cyber", "explanation": ...}
    stop_details: dict[str, Any] | None = None


@dataclass
class Call:
    """One request the fake received, with helpers to script answers."""

    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    #: a streamed answer: when its first text delta was written
    first_text_at: float | None = None
    #: the message the fake answered with (its usage counts thinking), once answered
    answer: dict[str, Any] | None = None

    @property
    def system(self) -> str:
        system = self.body.get("system", "")
        if isinstance(system, list):
            return "\n".join(b.get("text", "") for b in system)
        return str(system)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def agent(self) -> str:
        """`coordinator`, or the worker's name as its system prompt gives it."""
        marker = "Your name is "
        if marker in self.system:
            return self.system.split(marker, 1)[1].split(".", 1)[0]
        return "coordinator"

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.body.get("tools", [])]

    def blocks(self, index: int = -1) -> list[dict[str, Any]]:
        if not self.messages:
            return []
        content = self.messages[index]["content"]
        return [{"type": "text", "text": content}] if isinstance(content, str) else content

    @property
    def last_text(self) -> str:
        """All text of the newest message, tool results included, but the runtime's
        clock line (`[Now: ...]`, see `clock`), its context block and the delimiter lines
        of untrusted blocks: what was said, for scripts to match."""
        parts = []
        for b in self.blocks():
            if b.get("type") == "text":
                if not b["text"].startswith((CLOCK, CONTEXT)):
                    parts.append(unwrap(b["text"]))
            elif b.get("type") == "tool_result":
                content = b.get("content")
                parts.append(content if isinstance(content, str) else json.dumps(content))
        return "\n".join(parts)

    @property
    def clock(self) -> str | None:
        """The newest `[Now: YYYY-MM-DD HH:MM <zone> ...]` line of the newest message."""
        lines = [b["text"] for b in self.blocks() if str(b.get("text", "")).startswith(CLOCK)]
        return lines[-1] if lines else None

    @property
    def context(self) -> str:
        """The runtime's context blocks in the messages (profiles, memory written since the
        system prompt was built: what changes per turn, kept out of the cached prefix)."""
        return "\n".join(
            b["text"]
            for m in self.messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "text" and b["text"].startswith(CONTEXT)
        )

    @property
    def all_text(self) -> str:
        return json.dumps(self.body.get("messages", []))

    def tool_results(self) -> list[dict[str, Any]]:
        return [b for b in self.blocks() if b.get("type") == "tool_result"]


Responder = Callable[
    [Call], "list[dict[str, Any]] | Reply | Awaitable[list[dict[str, Any]] | Reply]"
]


def _echo(call: Call) -> list[dict[str, Any]]:
    return [text(f"echo: {call.last_text}")]


#: what the real API answers for these statuses (docs.anthropic.com, "Errors")
ERRORS = {
    401: ("authentication_error", "invalid x-api-key"),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    529: ("overloaded_error", "scripted failure"),
}


class FakeAnthropic(ThreadedServer[list[Call]]):
    name = "fake Anthropic"
    client_max_size = 64 * 1024 * 1024

    def __init__(self, responder: Responder = _echo) -> None:
        super().__init__()
        self.responder: Responder = responder
        self.calls: Kept[Call] = Kept()
        self.failures: list[tuple[int, dict[str, str]]] = []
        #: requests the real API would refuse, with its reasons (a test failure)
        self.violations: list[tuple[Call, list[str]]] = []
        #: the models it plays, by id; a test may add one (`GET /v1/models/{id}` finds it)
        self.models: dict[str, ModelSpec] = dict(MODELS)
        #: the model ids looked up with `GET /v1/models/{id}`, known or not
        self.lookups: list[str] = []
        #: None: think as the model does; False: add no thinking block (tests of something
        #: else that script old answers); True: think even when the request turns it off
        self.thinks: bool | None = None
        self._ledger = Ledger()

    @property
    def keep(self) -> int | None:
        """How many of the newest calls `calls` keeps (None: every one, as tests read
        them); a long soak keeps a few: each holds its whole request, ~70 KB parsed."""
        return self.calls.keep

    @keep.setter
    def keep(self, keep: int | None) -> None:
        self.calls.keep = keep

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "test-key"}

    def fail(self, status: int, times: int = 1, retry_after: float | None = 0) -> None:
        """The next `times` requests get HTTP `status` (529 overloaded, 429, 500...)."""
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        self.failures.extend([(status, headers)] * times)

    # -- the server (see ThreadedServer) -----------------------------------------------
    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models/{model_id}", self._model)

    def _watched(self) -> list[Call]:
        return self.calls

    def _progress(self) -> str:
        return f"{len(self.calls)} calls"

    # -- the endpoint --------------------------------------------------------------
    async def _messages(self, request: web.Request) -> web.Response:
        return await self._answer_body(request, await request.json())

    async def _answer_body(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        """Answer a Messages API body (the route took it out of its own request form)."""
        call = Call(body, dict(request.headers))
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        spec = spec_for(str(body.get("model", "")), self.models)
        refused = problems(body, self.models) + self._ledger.problems(body, spec)
        if refused:
            self.violations.append((call, refused))
            return _error(400, "invalid_request_error", "; ".join(refused))
        if self.failures:
            status, headers = self.failures.pop(0)
            kind, message = ERRORS.get(status, ("api_error", "scripted failure"))
            error = {"type": "error", "error": {"type": kind, "message": message}}
            return web.json_response(error, status=status, headers=headers)
        reply = self.responder(call)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, Reply):
            reply = Reply(list(reply))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            kind = "invalid_request_error" if reply.status == 400 else "api_error"
            return _error(reply.status, kind, reply.error)
        message = self._answer(call, spec, reply)
        call.answer = message
        if body.get("stream"):
            return await stream(request, call, message, reply, self._stream_response())
        return web.json_response(message)

    def _stream_response(self) -> web.StreamResponse | None:
        """The response a streamed answer is written on (None: server-sent events)."""
        return None

    async def _model(self, request: web.Request) -> web.Response:
        model_id = request.match_info["model_id"]
        self.lookups.append(model_id)
        if model_id not in self.models:
            return _error(404, "not_found_error", f"model: {model_id}")
        return web.json_response(model_info(model_id, self.models[model_id]))

    def _answer(self, call: Call, spec: ModelSpec, reply: Reply) -> dict[str, Any]:
        """The message the model sends for `reply`, thinking as `spec` does; remembered,
        so the thinking blocks that come back can be checked."""
        summary = f"Considering: {call.last_text[:60]}"
        answer = self._ledger.issue(reply.content, call.body, spec, summary, self.thinks)
        uses_tool = any(b["type"] == "tool_use" for b in answer.content)
        stop = reply.stop_reason or ("tool_use" if uses_tool else "end_turn")
        self._ledger.record(answer.content, stop)
        return _message(call.body, answer, stop, reply.stop_details)


def _message(
    body: dict[str, Any], answer: Answer, stop: str, details: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": answer.content,
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": details,
        "usage": {
            # the same whether streamed or not, as the real count is
            "input_tokens": len(json.dumps({k: v for k, v in body.items() if k != "stream"})) // 4,
            "output_tokens": 10 + answer.thinking_tokens,
            "output_tokens_details": {"thinking_tokens": answer.thinking_tokens},
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response(
        {"type": "error", "error": {"type": kind, "message": message}}, status=status
    )
