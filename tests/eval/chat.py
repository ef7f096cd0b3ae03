"""The evaluation's scripted models (tests/eval/models.py, written against the fake
Anthropic API's `Call`) playing an OpenAI-compatible server (tests/fakes/openai_api.py).

`ChatModel` reads a Chat Completions request back into the Messages API form the
scripts match on (the system message, `tool_calls` as `tool_use` blocks, `tool`
messages as `tool_result` blocks in the user turn that follows, as Anthropic's API
wants them), asks the script, and answers its blocks in Chat Completions' form: text,
tool calls with JSON arguments, and the script's delay. It reads what the server was
sent, so a translation that lost a tool result or a tool call's arguments on the way
out makes the script answer wrongly and the task fail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.anthropic_api import Call, Reply
from tests.fakes.openai_api import Answer, ChatCall

Script = Callable[[Call], "list[dict[str, Any]] | Reply"]


class ChatModel:
    def __init__(self, script: Script) -> None:
        self.script = script

    def __call__(self, call: ChatCall) -> Answer:
        reply = self.script(Call(messages_body(call.body), call.headers))
        if not isinstance(reply, Reply):
            reply = Reply(list(reply))
        said = "\n".join(b["text"] for b in reply.content if b.get("type") == "text")
        calls = [
            (b["name"], json.dumps(b["input"]))
            for b in reply.content
            if b.get("type") == "tool_use"
        ]
        return Answer(said, calls, delay=reply.delay)


def messages_body(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions body in the Messages API's form."""
    system = [m["content"] for m in body["messages"] if m["role"] in ("system", "developer")]
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        role = message["role"]
        if role in ("system", "developer"):
            continue
        blocks = _assistant(message) if role == "assistant" else _user(message)
        side = "assistant" if role == "assistant" else "user"
        if messages and messages[-1]["role"] == side:
            messages[-1]["content"] += blocks  # a tool message, then the user's words
        else:
            messages.append({"role": side, "content": blocks})
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"].get("parameters", {})}
        for t in body.get("tools", [])
    ]
    return {"model": body["model"], "system": "\n\n".join(system), "messages": messages,
            "tools": tools}  # fmt: skip


def _assistant(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": _text(message["content"])})
    for c in message.get("tool_calls") or []:
        fn = c["function"]
        blocks.append({"type": "tool_use", "id": c["id"], "name": fn["name"],
                       "input": json.loads(fn["arguments"] or "{}")})  # fmt: skip
    return blocks


def _user(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message["role"] == "tool":
        return [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                 "content": _text(message["content"])}]  # fmt: skip
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{"type": "text", "text": p["text"]} for p in content if p.get("type") == "text"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
