"""Anthropic blocks to OpenAI Chat Completions and back: the translation at the edge
of the `openai:` provider (agents/model/providers/openai_chat.py), pure functions.

To the server: the system prompt is a `system` message; a user turn's `tool_result`
blocks become `tool` messages (first, right after the assistant's calls, as the API
wants), its text and images a `user` message (`image_url` with a data URL; a PDF is
replaced by a note: Chat Completions servers rarely take one); an assistant turn's text
and `tool_use` blocks become `content` and `tool_calls`. Thinking blocks are dropped:
no other model can read them. Cache breakpoints and Anthropic-only tool fields are
left out.

From the server: the stream's deltas are gathered (`Gathered`): text, refusal text,
tool calls by `index` (the id and name come in the first delta of a call, the
arguments in pieces), `finish_reason` and the usage chunk. `finish_reason` maps to
the model contract: `stop` → end_turn, `tool_calls` → tool_use, `length` → max_tokens
(the runtime continues a cut answer), `content_filter` → refusal. Arguments that are
not JSON stay a string: the toolbox answers the model with an error result
("arguments must be a JSON object"), and the turn goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.model.blocks import (
    Block,
    Blocks,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    blocks_of,
    text_block,
)
from agents.model.providers.base import LLMResponse, ModelUnavailable, Request, StopDetails
from bot.core.model_calls import Usage

STOPS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
PDF_NOTE = "[a PDF was left out: this model's API takes none]"


def chat_request(request: Request, model: str) -> dict[str, Any]:
    """The Chat Completions body for an Anthropic-form request (streamed, with usage)."""
    system = "\n\n".join(b["text"] for b in request.get("system", []) if b.get("text"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in request["messages"]:
        messages.extend(_translated(message))
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_completion_tokens": request["max_tokens"],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.get("tools"):
        body["tools"] = [_function(t) for t in request["tools"]]
    return body


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    spec = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
    if tool.get("description"):
        spec["description"] = tool["description"]
    return {"type": "function", "function": spec}


def _translated(message: Message) -> list[dict[str, Any]]:
    blocks = blocks_of(message["content"])
    if message["role"] == "assistant":
        return [_assistant(blocks)]
    out = [_tool_message(b) for b in blocks if b["type"] == "tool_result"]
    parts = [p for b in blocks if b["type"] != "tool_result" for p in _parts(b)]
    parts += [p for b in blocks if b["type"] == "tool_result" for p in _media(b)]
    if parts:
        out.append({"role": "user", "content": parts})
    return out


def _assistant(blocks: Blocks) -> dict[str, Any]:
    text = "\n\n".join(b["text"] for b in blocks if b["type"] == "text")
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": _arguments(b["input"])},
        }
        for b in blocks
        if b["type"] == "tool_use"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _arguments(value: dict[str, Any] | str) -> str:
    """The call's arguments as the model wrote them (a string it sent stays one)."""
    return value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)


def _tool_message(block: ToolResultBlock) -> dict[str, Any]:
    text = "\n".join(p["text"] for p in _parts_of_result(block) if p["type"] == "text")
    if block.get("is_error"):
        text = text if text.startswith("Error") else f"Error: {text}"
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text or "(empty)"}


def _parts_of_result(block: ToolResultBlock) -> list[dict[str, Any]]:
    return [p for b in blocks_of(block.get("content") or "") for p in _parts(b)]


def _media(block: ToolResultBlock) -> list[dict[str, Any]]:
    """The images a tool returned: a `tool` message holds text only, so they follow in
    the user message."""
    return [p for p in _parts_of_result(block) if p["type"] != "text"]


def _parts(block: Block) -> list[dict[str, Any]]:
    if block["type"] == "text":
        return [{"type": "text", "text": block["text"]}]
    source = block["source"] if block["type"] == "image" else None
    if source is not None and source["type"] == "base64":
        url = f"data:{source['media_type']};base64,{source['data']}"
        return [{"type": "image_url", "image_url": {"url": url}}]
    if source is not None and source["type"] == "url":
        return [{"type": "image_url", "image_url": {"url": source["url"]}}]
    if block["type"] == "document":
        return [{"type": "text", "text": PDF_NOTE}]
    return []  # thinking and anything else no other API reads


@dataclass
class Call:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class Gathered:
    """A streamed answer, gathered chunk by chunk."""

    text: str = ""
    refusal: str = ""
    calls: dict[int, Call] = field(default_factory=dict)
    finish: str | None = None
    usage: Usage = field(default_factory=Usage)
    choices: int = 0

    def add(self, chunk: Any) -> str:
        """Take one chunk; the text it adds (for the live feed)."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = _usage(chunk.usage)
        added = ""
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue  # one answer was asked for (n=1)
            self.choices += 1
            delta = choice.delta
            if delta is not None:
                added += self._delta(delta)
            if choice.finish_reason:
                self.finish = choice.finish_reason
        return added

    def _delta(self, delta: Any) -> str:
        text = delta.content or ""
        self.text += text
        self.refusal += getattr(delta, "refusal", None) or ""
        for piece in delta.tool_calls or []:
            call = self.calls.setdefault(piece.index, Call())
            call.id = piece.id or call.id
            fn = piece.function
            if fn is not None:
                call.name = fn.name or call.name
                call.arguments += fn.arguments or ""
        return text

    def response(self) -> LLMResponse:
        """The answer in Anthropic's form; ModelUnavailable for a stream that did not
        finish (the turn is asked again, nothing is stored)."""
        if not self.choices:
            raise ModelUnavailable("the server's answer held no choice (empty `choices`)")
        if self.finish is None:
            raise ModelUnavailable("the server's stream ended without a finish_reason")
        content: Blocks = []
        if self.text.strip():
            content.append(text_block(self.text))
        content += [_tool_use(i, c) for i, c in sorted(self.calls.items())]
        stop = STOPS.get(self.finish, self.finish)
        if self.calls and stop == "end_turn":
            stop = "tool_use"  # servers that say `stop` after calls (Ollama, some vLLM)
        details: StopDetails | None = None
        if stop == "refusal" or (self.refusal and not content):
            stop = "refusal"
            explanation = self.refusal or f"finish_reason: {self.finish}"
            details = {"type": "refusal", "explanation": explanation}
        return LLMResponse(content, stop, self.usage, details)


def _tool_use(index: int, call: Call) -> ToolUseBlock:
    try:
        arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError:
        arguments = call.arguments  # not JSON: the toolbox answers with an error
    return {
        "type": "tool_use",
        "id": call.id or f"call_{index}",
        "name": call.name,
        "input": arguments,
    }


def _usage(u: Any) -> Usage:
    prompt = getattr(u, "prompt_tokens_details", None)
    completion = getattr(u, "completion_tokens_details", None)
    cached = getattr(prompt, "cached_tokens", None) or 0
    return Usage(
        (u.prompt_tokens or 0) - cached,
        u.completion_tokens or 0,
        cached,
        0,
        getattr(completion, "reasoning_tokens", None) or 0,
    )
