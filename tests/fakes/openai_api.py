"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1 (`/v1/chat/completions`).

It answers as the real API documents it: a JSON `chat.completion`, or with
`stream: true` server-sent events of `chat.completion.chunk` objects, each `data: {...}`
line followed by a blank one, the first delta carrying `role`, text in `content`
pieces, a tool call's `id`, `type` and `function.name` in its first delta (by `index`,
so parallel calls interleave) and its `arguments` in later pieces, `finish_reason`
in the last choice chunk, then (with `stream_options.include_usage`) a chunk with
empty `choices` and the `usage`, then `data: [DONE]`.

A test sets `responder`, a function of the `ChatCall` returning an `Answer` (text,
`calls`, `finish`, a `delay` before answering), or an awaitable of one, and may
script the bad shapes a server sends: `shape="json"` (a JSON body to a streamed
request), `"no_finish"` (the stream stops without a finish_reason), `"no_choices"`
(only the usage chunk). `fail` queues HTTP errors. Every request is checked against
what the real API refuses (`problems`): a request it would refuse gets a 400 and is
kept in `violations`.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.threaded import ThreadedServer

_ids = itertools.count(1)
ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass
class Answer:
    text: str = ""
    #: (name, arguments as the model writes them: a JSON text, or not)
    calls: list[tuple[str, str]] = field(default_factory=list)
    #: None: `tool_calls` when it calls, else `stop`
    finish: str | None = None
    refusal: str = ""
    shape: str = "ok"  # ok | json | no_finish | no_choices
    piece: int = 7  # characters per streamed delta
    delay: float = 0.0  # seconds before the answer starts (a model that takes its time)
    #: the calls' ids, as a server writes them (Kimi's `functions.name:0`); else `call_N`
    ids: list[str] = field(default_factory=list)


@dataclass
class ChatCall:
    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def last_text(self) -> str:
        for message in reversed(self.messages):
            if message["role"] == "user":
                return _text(message.get("content"))
        return ""

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]

    def tool_results(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["role"] == "tool"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


Responder = Callable[[ChatCall], Answer | Awaitable[Answer]]


def _echo(call: ChatCall) -> Answer:
    return Answer(f"echo: {call.last_text[-200:]}")


class FakeOpenAI(ThreadedServer[list[ChatCall]]):
    name = "fake OpenAI"
    client_max_size = 64 * 1024 * 1024

    def __init__(self, responder: Responder = _echo) -> None:
        super().__init__()
        self.responder = responder
        self.calls: list[ChatCall] = []
        self.failures: list[int] = []
        self.violations: list[tuple[ChatCall, list[str]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "sk-test"}

    def fail(self, status: int, times: int = 1) -> None:
        self.failures.extend([status] * times)

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._complete)

    def _watched(self) -> list[ChatCall]:
        return self.calls

    def _progress(self) -> str:
        return f"{len(self.calls)} calls"

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        call = ChatCall(body, dict(request.headers))
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        refused = problems(body)
        if refused:
            self.violations.append((call, refused))
            return _error(400, "invalid_request_error", "; ".join(refused))
        if self.failures:
            status = self.failures.pop(0)
            return _error(status, "server_error", "scripted failure")
        answer = self.responder(call)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer.delay:
            await asyncio.sleep(answer.delay)
        if body.get("stream") and answer.shape != "json":
            return await _stream(request, body, answer)
        return web.json_response(_completion(body, answer))


def problems(body: dict[str, Any]) -> list[str]:
    """What the real API answers 400 to, of what a client might send wrongly."""
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("you must provide a model parameter")
    if "cache_control" in json.dumps(body) or "thinking" in body:
        out.append("Unrecognized request argument supplied: cache_control/thinking")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: must be a non-empty array"]
    out += _order(messages)
    for tool in body.get("tools", []):
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            out.append("tools: each must be {type: function, function: {name, parameters}}")
    return out


def _order(messages: list[dict[str, Any]]) -> list[str]:
    """Every `tool` message answers a call of the assistant message before it, and every
    call is answered before the next non-tool message."""
    out: list[str] = []
    open_ids: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ROLES:
            out.append(f"messages[{i}].role: invalid {role!r}")
        elif role == "tool":
            if m.get("tool_call_id") not in open_ids:
                out.append(f"messages[{i}]: a tool message must respond to a preceding tool_call")
            open_ids.discard(m.get("tool_call_id"))
            if not isinstance(m.get("content"), str | list):
                out.append(f"messages[{i}].content: required")
        else:
            out += _unanswered(open_ids)
            open_ids = set()
            if role == "assistant":
                open_ids = {c["id"] for c in m.get("tool_calls") or []}
                if m.get("content") is None and not open_ids:
                    out.append(f"messages[{i}]: an assistant message needs content or tool_calls")
    return out + _unanswered(open_ids)


def _unanswered(ids: set[str]) -> list[str]:
    if not ids:
        return []
    return [
        "an assistant message with 'tool_calls' must be followed by tool messages "
        f"responding to each 'tool_call_id': {sorted(ids)}"
    ]


def _chunk(body: dict[str, Any], cid: str, choices: list[Any], **extra: Any) -> bytes:
    chunk = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body["model"],
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


async def _stream(request: web.Request, body: dict[str, Any], answer: Answer) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    cid = f"chatcmpl-{next(_ids)}"
    if answer.shape != "no_choices":
        await response.write(_chunk(body, cid, [_choice({"role": "assistant", "content": ""})]))
        for delta in _deltas(answer):
            await response.write(_chunk(body, cid, [_choice(delta)]))
        if answer.shape != "no_finish":
            await response.write(_chunk(body, cid, [_choice({}, _finish(answer))]))
    if answer.shape != "no_finish" and body.get("stream_options", {}).get("include_usage"):
        await response.write(_chunk(body, cid, [], usage=_usage(body, answer)))
    if answer.shape != "no_finish":
        await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _deltas(answer: Answer) -> list[dict[str, Any]]:
    n = answer.piece
    out: list[dict[str, Any]] = [
        {"content": answer.text[i : i + n]} for i in range(0, len(answer.text), n)
    ]
    if answer.refusal:
        out.append({"refusal": answer.refusal})
    starts = [
        {"tool_calls": [{"index": k, "id": _call_id(answer, k), "type": "function",
                         "function": {"name": name, "arguments": ""}}]}
        for k, (name, _) in enumerate(answer.calls)
    ]  # fmt: skip
    pieces = [
        {"tool_calls": [{"index": k, "function": {"arguments": args[i : i + n]}}]}
        for k, (_, args) in enumerate(answer.calls)
        for i in range(0, len(args), n)
    ]
    # parallel calls interleave: every call starts, then their arguments come in turns
    return out + starts + sorted(pieces, key=lambda d: d["tool_calls"][0]["index"] % 2)


def _call_id(answer: Answer, k: int) -> str:
    return answer.ids[k] if k < len(answer.ids) else f"call_{next(_ids)}"


def _finish(answer: Answer) -> str:
    return answer.finish or ("tool_calls" if answer.calls else "stop")


def _usage(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    prompt = len(json.dumps(body["messages"])) // 4
    completion = 5 + (len(answer.text) + sum(len(a) for _, a in answer.calls)) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _completion(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    calls = [
        {"id": _call_id(answer, k), "type": "function", "function": {"name": n, "arguments": a}}
        for k, (n, a) in enumerate(answer.calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(answer)}],
        "usage": _usage(body, answer),
    }


def _error(status: int, kind: str, message: str) -> web.Response:
    error = {"message": message, "type": kind, "param": None, "code": None}
    return web.json_response({"error": error}, status=status)
