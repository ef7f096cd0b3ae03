"""An MCP `CallToolResult` as the model reads it: a `ToolResult`.

Text content stays text; structured content becomes compact JSON, in place of text
blocks that are only its JSON serialisation (the spec has servers repeat it so for
older clients; a plain-text rendering, like the SDK's for a returned string, is
kept as the more readable of the two); images become
image blocks for the model; resources are named; `isError` becomes an error text.
Everything is cut at `max_chars` with a note saying so, so one chatty tool cannot
fill the context, and the text is an `<untrusted>` block (agents/loop/marking.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents.loop.marking import untrusted
from agents.model.blocks import ImageBlock, ResultPart
from agents.tools.toolbox import ToolResult

if TYPE_CHECKING:  # content is told apart by its `type`: the MCP SDK loads with a server
    from mcp import types

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def to_result(tool: str, result: types.CallToolResult, max_chars: int) -> ToolResult:
    texts: list[str] = []
    blocks: list[ResultPart] = []
    structured = result.structured_content
    for item in result.content:
        if item.type == "text":
            if structured is None or not _is_json(item.text):
                texts.append(item.text)
        elif item.type == "image" and item.mime_type in IMAGE_TYPES:
            blocks.append(_image(item))
        else:
            texts.append(_describe(item))
    if structured is not None and not texts:
        texts.insert(0, json.dumps(structured, separators=(",", ":"), ensure_ascii=False))
    text, source = "\n".join(texts), f"result of MCP tool {tool}"
    if result.is_error:
        details = marked(text or "(no details)", source, max_chars)
        return ToolResult(f"Error from {tool}: {details}", is_error=True)
    shown = marked(text, source, max_chars) if text else "" if blocks else "(no output)"
    return ToolResult(shown, blocks=blocks)


def cut(text: str, max_chars: int) -> str:
    body, note = cut_apart(text, max_chars)
    return body + note


def cut_apart(text: str, max_chars: int) -> tuple[str, str]:
    """`text`'s first `max_chars` and the note saying what was cut ("" if nothing)."""
    if len(text) <= max_chars:
        return text, ""
    return text[:max_chars], (
        f"\n[... cut: the result was {len(text):,} characters; "
        f"the first {max_chars:,} are shown (SWITCHBOARD_TOOL_RESULT_MAX_CHARS)]"
    )


def marked(text: str, source: str, max_chars: int) -> str:
    """`text` cut to `max_chars` in an untrusted block, the note on the cut after it."""
    body, note = cut_apart(text, max_chars)
    return untrusted(body, source) + note


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _image(item: types.ImageContent) -> ImageBlock:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": item.mime_type, "data": item.data},
    }


def _describe(item: Any) -> str:
    """Content the model cannot take as such: say what it is."""
    kind = getattr(item, "type", type(item).__name__)
    if kind == "resource":
        resource = item.resource
        body = getattr(resource, "text", None)
        if body is not None:
            return f"[resource {resource.uri}]\n{body}"
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'}), not shown]"
    if kind == "resource_link":
        return f"[resource link: {item.uri}]"
    mime = getattr(item, "mime_type", None)
    return f"[{kind} content{' (' + mime + ')' if mime else ''}, not shown]"
