"""The fake Anthropic API's streamed answers: a whole message as the server-sent events
the real API writes, so a reader of the stream (the SDK's `messages.stream` helper, the
provider's own agents/model/providers/anthropic_stream.py) puts back exactly the message
the fake would have sent whole.

Events: message_start (no content, no stop_reason), a ping, then per block
content_block_start / deltas / content_block_stop, message_delta (stop_reason,
stop_details, the usage so far), message_stop. A text block arrives in
`Reply.piece`-character text_delta events, `pace` seconds apart; a tool call's input as
the API streams it, an empty input_json_delta first, then its JSON in `piece`-character
pieces (cut anywhere, inside a string or a multi-byte character's escape alike); a
thinking block empty, then its thinking_delta pieces and one signature_delta just before
its stop; a redacted_thinking block whole in its start. Touches only the response it
writes to.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from tests.fakes.anthropic_api import Call, Reply


async def stream(
    request: web.Request,
    call: Call,
    message: dict[str, Any],
    reply: Reply,
    response: web.StreamResponse | None = None,
) -> web.StreamResponse:
    """Write `message` as events on `response` (a server-sent event stream unless the
    caller frames the events otherwise: tests/fakes/bedrock_api.py)."""
    response = response or web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    start = {**message, "content": [], "stop_reason": None, "stop_details": None}
    await _event(response, "message_start", {"message": start})
    await _event(response, "ping", {})
    for index, block in enumerate(message["content"]):
        await _block(response, index, block, reply, call)
    delta = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": None,
        "stop_details": message["stop_details"],
    }
    usage = {k: message["usage"][k] for k in ("output_tokens", "output_tokens_details")}
    await _event(response, "message_delta", {"delta": delta, "usage": usage})
    await _event(response, "message_stop", {})
    await response.write_eof()
    return response


async def _block(
    response: web.StreamResponse, index: int, block: dict[str, Any], reply: Reply, call: Call
) -> None:
    empty, deltas = _pieces(block, reply.piece)
    await _event(response, "content_block_start", {"index": index, "content_block": empty})
    for delta in deltas:
        if reply.pace and delta["type"] == "text_delta":
            await asyncio.sleep(reply.pace)
        await _event(response, "content_block_delta", {"index": index, "delta": delta})
        if call.first_text_at is None and delta["type"] == "text_delta":
            call.first_text_at = time.monotonic()
    await _event(response, "content_block_stop", {"index": index})


def _pieces(block: dict[str, Any], piece: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The block as its content_block_start carries it, and the deltas that fill it."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [
            {"type": "text_delta", "text": p} for p in _split(block["text"], piece)
        ]
    if kind == "thinking":
        deltas = [
            {"type": "thinking_delta", "thinking": p} for p in _split(block["thinking"], piece)
        ]
        signed = {"type": "signature_delta", "signature": block["signature"]}
        return {"type": "thinking", "thinking": "", "signature": ""}, [*deltas, signed]
    if kind == "tool_use":
        arguments = ["", *_split(json.dumps(block["input"]), piece)]
        return {**block, "input": {}}, [
            {"type": "input_json_delta", "partial_json": p} for p in arguments
        ]
    return block, []


def _split(s: str, size: int) -> list[str]:
    return [s[i : i + size] for i in range(0, len(s), size)]


async def _event(response: web.StreamResponse, kind: str, data: dict[str, Any]) -> None:
    payload = json.dumps({"type": kind, **data})
    await response.write(f"event: {kind}\ndata: {payload}\n\n".encode())
