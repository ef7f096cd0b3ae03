"""What another API wrote, in the form Anthropic's Messages API takes: the history of a
turn that moved to Claude from an OpenAI-compatible model (failover, or a role's model
changed), pure functions used by agents/model/providers/anthropic.py.

Chat Completions lets a server write what Anthropic's API refuses: a tool call's
arguments that are not a JSON object (kept as the model wrote them, a string: the
toolbox answered it with an error) and call ids off Anthropic's pattern
(`^[a-zA-Z0-9_-]+$`; Kimi writes `functions.name:0`). The arguments go as
`{"arguments_as_written": "<the text>"}`, so Claude reads what was called and why it
failed; an id becomes its allowed characters plus a short digest of the original (the
same in the call and its result, and in every request, so the prompt cache holds).
The stored conversation is never changed; a request with nothing to translate is
returned as it is (the usual case: a few dict lookups per block).
"""

from __future__ import annotations

import hashlib
import re

from agents.model.blocks import Block, Message
from agents.model.providers.base import Request

ID = re.compile(r"^[a-zA-Z0-9_-]+$")
AS_WRITTEN = "arguments_as_written"


def anthropic_form(request: Request) -> Request:
    """`request` with every foreign tool call and id in the form the API takes."""
    messages = request["messages"]
    fixed = [_message(m) for m in messages]
    if all(a is b for a, b in zip(fixed, messages, strict=True)):
        return request
    return {**request, "messages": fixed}


def _message(message: Message) -> Message:
    content = message["content"]
    if isinstance(content, str):
        return message
    blocks = [_block(b) for b in content]
    if all(a is b for a, b in zip(blocks, content, strict=True)):
        return message
    return {**message, "content": blocks}


def _block(block: Block) -> Block:
    if block["type"] == "tool_use":
        arguments = block["input"]
        good_id, good_input = ID.match(block["id"] or "-"), isinstance(arguments, dict)
        if good_id and good_input:
            return block
        return {**block, "id": tool_id(block["id"]),
                "input": arguments if good_input else {AS_WRITTEN: arguments}}  # fmt: skip
    if block["type"] == "tool_result" and not ID.match(block["tool_use_id"] or "-"):
        return {**block, "tool_use_id": tool_id(block["tool_use_id"])}
    return block


def tool_id(original: str) -> str:
    """An id Anthropic's API takes, the same for the same original."""
    if original and ID.match(original):
        return original
    digest = hashlib.sha256(original.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^a-zA-Z0-9_-]', '_', original)[:40]}_{digest}"
