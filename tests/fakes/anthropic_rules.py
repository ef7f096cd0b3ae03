"""What the real Messages API refuses with a 400, checked on every request the fake
Anthropic API receives (tests/fakes/anthropic_api.py).

A request the real API would refuse gets the same kind of answer here
(`invalid_request_error`), and is recorded as a violation that fails the test (see
the `fake` fixture in tests/conftest.py): a test must fail where production would.
`problems(body)` lists every rule the request breaks; empty means valid. What depends on
the model (its thinking, effort, sampling and limits) is in tests/fakes/anthropic_params.py;
whether thinking blocks came back as issued needs the fake's memory
(tests/fakes/anthropic_thinking.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jsonschema

from tests.fakes.anthropic_models import MODELS, ModelSpec, spec_for
from tests.fakes.anthropic_params import param_problems

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_IMAGES = 100
MANY_IMAGES = 20
MAX_BREAKPOINTS = 4
IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
USER_BLOCKS = {"text", "image", "document", "tool_result"}
THINKING_BLOCKS = {"thinking", "redacted_thinking"}
ASSISTANT_BLOCKS = {"text", "tool_use", *THINKING_BLOCKS}
#: the fields a thinking block sent back holds (SDK types/*thinking_block_param.py)
THINKING_FIELDS = {
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
#: the fields of a custom tool (anthropic 2.14, `types/tool_param.py`); any other is refused
TOOL_FIELDS = {
    "name",
    "description",
    "input_schema",
    "input_examples",
    "cache_control",
    "type",
    "strict",
    "defer_loading",
    "allowed_callers",
    "eager_input_streaming",
}

Body = dict[str, Any]
Blocks = list[dict[str, Any]]


def problems(body: Body, models: Mapping[str, ModelSpec] = MODELS) -> list[str]:
    """Every reason the real API would refuse this request, for its model as `models`
    (a name they do not hold is an old model: tests/fakes/anthropic_models.py)."""
    out = param_problems(body, spec_for(str(body.get("model", "")), models))
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        out.append("max_tokens: a positive integer is required")
    out.extend(_system(body.get("system")))
    out.extend(_tools(body.get("tools") or []))
    out.extend(_messages(body.get("messages")))
    out.extend(_media(body.get("messages") or []))
    if _breakpoints(body) > MAX_BREAKPOINTS:
        out.append(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided")
    return out


def _system(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    return [f"system.{i}: {p}" for i, b in enumerate(system) for p in _text_block(b)]


def _tools(tools: Blocks) -> list[str]:
    out = []
    names = [t.get("name", "") for t in tools]
    for i, tool in enumerate(tools):
        if not NAME.match(str(tool.get("name", ""))):
            out.append(f"tools.{i}.name: String should match pattern '{NAME.pattern}'")
        if (tool.get("input_schema") or {}).get("type") != "object":
            out.append(f"tools.{i}.input_schema.type: Input should be 'object'")
        for key in sorted(set(tool) - TOOL_FIELDS):
            out.append(f"tools.{i}.custom.{key}: Extra inputs are not permitted")
        out.extend(_examples(i, tool))
    if len(set(names)) != len(names):
        out.append("tools: Tool names must be unique")
    return out


def _examples(i: int, tool: dict[str, Any]) -> list[str]:
    """`input_examples`: a list of objects, each valid against the tool's input_schema
    (the API documents a 400 for an example that is not)."""
    examples = tool.get("input_examples")
    if examples is None:
        return []
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        return [f"tools.{i}.custom.input_examples: Input should be a list of objects"]
    validator = jsonschema.Draft202012Validator(tool.get("input_schema") or {})
    return [
        f"tools.{i}.custom.input_examples.{n}: {error.message}"
        for n, example in enumerate(examples)
        for error in list(validator.iter_errors(example))[:1]
    ]


def _messages(messages: Any) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    if messages[0].get("role") != "user":
        return ["messages.0.role: the first message must use the user role"]
    out = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if i and role == messages[i - 1].get("role"):
            out.append(f"messages.{i}: roles must alternate between user and assistant")
        final = i == len(messages) - 1
        out.extend(f"messages.{i}.{p}" for p in _content(message, final))
        if role == "assistant":
            after = messages[i + 1] if i + 1 < len(messages) else None
            out.extend(f"messages.{i}: {p}" for p in _answered(message, after))
    return out


def _content(message: dict[str, Any], final: bool) -> list[str]:
    role, content = message.get("role"), message.get("content")
    if isinstance(content, str):
        if not content.strip() and not (final and role == "assistant"):
            return ["content: text content blocks must contain non-whitespace text"]
        return _trailing(role, content, final)
    if not content:
        if final and role == "assistant":
            return []
        return ["content: all messages must have non-empty content except for the optional "
                "final assistant message"]  # fmt: skip
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
    out = [f"content.{i}.type: {b.get('type')!r} is not allowed in a {role} message"
           for i, b in enumerate(content) if b.get("type") not in allowed]  # fmt: skip
    for i, block in enumerate(content):
        out.extend(f"content.{i}.{p}" for p in _block(block))
    last = content[-1]
    if last.get("type") == "text":
        out.extend(_trailing(role, str(last.get("text", "")), final))
    if role == "user":
        out.extend(_results_first(content))
    else:
        out.extend(_thinking_first(content))
    return out


def _block(block: dict[str, Any]) -> list[str]:
    kind = block.get("type")
    if kind == "text":
        return _text_block(block)
    if kind == "tool_use":
        out = []
        if not NAME.match(str(block.get("name", ""))):
            out.append(f"name: String should match pattern '{NAME.pattern}'")
        if not TOOL_ID.match(str(block.get("id", ""))):
            out.append(f"id: String should match pattern '{TOOL_ID.pattern}'")
        if not isinstance(block.get("input"), dict):
            out.append("input: Input should be a valid dictionary")
        return out
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return [p for b in content for p in _block(b)]
        return []
    if kind in THINKING_FIELDS:
        return _thinking_block(kind, block)
    return []


def _thinking_block(kind: str, block: dict[str, Any]) -> list[str]:
    """A thinking block goes back with exactly its fields: no `cache_control` on it."""
    fields = THINKING_FIELDS[kind]
    out = [f"{kind}.{key}: Extra inputs are not permitted" for key in sorted(set(block) - fields)]
    out += [f"{kind}.{key}: Field required" for key in sorted(fields - set(block))]
    out += [f"{kind}.{key}: Input should be a valid string"
            for key in sorted(fields & set(block)) if not isinstance(block[key], str)]  # fmt: skip
    return out


def _text_block(block: dict[str, Any]) -> list[str]:
    if not str(block.get("text", "")).strip():
        return ["text: text content blocks must contain non-whitespace text"]
    return []


def _trailing(role: Any, text: str, final: bool) -> list[str]:
    if final and role == "assistant" and text != text.rstrip():
        return ["content: final assistant content cannot end with trailing whitespace"]
    return []


def _results_first(content: Blocks) -> list[str]:
    kinds = [b.get("type") for b in content]
    results = kinds.count("tool_result")
    if results and kinds[:results] != ["tool_result"] * results:
        return ["content: tool_result blocks must come first, before any other content"]
    return []


def _thinking_first(content: Blocks) -> list[str]:
    """In an assistant message, thinking comes before what the model said or called."""
    kinds = [b.get("type") for b in content]
    said = next((i for i, k in enumerate(kinds) if k not in THINKING_BLOCKS), len(kinds))
    return [f"content.{i}.type: `{k}` blocks must come before any `text` or `tool_use` block"
            for i, k in enumerate(kinds) if i > said and k in THINKING_BLOCKS]  # fmt: skip


def _answered(message: dict[str, Any], after: dict[str, Any] | None) -> list[str]:
    """Every tool_use is answered by exactly one tool_result in the next user turn."""
    content = message.get("content")
    uses = [b["id"] for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
    got: list[str] = []
    if after is not None and isinstance(after.get("content"), list):
        got = [b.get("tool_use_id", "") for b in after["content"] if b.get("type") == "tool_result"]
    if sorted(got) != sorted(uses):
        return [
            f"tool_use ids {uses} must each have exactly one tool_result in the next "
            f"message, found {got}"
        ]
    return []


def _media(messages: list[dict[str, Any]]) -> list[str]:
    images = [b for b in _all_blocks(messages) if b.get("type") == "image"]
    documents = [b for b in _all_blocks(messages) if b.get("type") == "document"]
    out = []
    if len(images) > MAX_IMAGES:
        out.append(f"Too many images: {len(images)} > {MAX_IMAGES}")
    for block in images:
        source = block.get("source") or {}
        if source.get("type") == "base64" and source.get("media_type") not in IMAGE_TYPES:
            out.append(f"image.source.media_type: {source.get('media_type')!r} is not supported")
    for block in documents:
        source = block.get("source") or {}
        if source.get("type") == "base64" and source.get("media_type") != "application/pdf":
            out.append(f"document.source.media_type: {source.get('media_type')!r}")
    return out


def _all_blocks(messages: list[dict[str, Any]]) -> Blocks:
    out: Blocks = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            out.append(block)
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                out.extend(block["content"])
    return out


def _breakpoints(body: Body) -> int:
    blocks = [*(body.get("tools") or [])]
    if isinstance(body.get("system"), list):
        blocks.extend(body["system"])
    blocks.extend(_all_blocks(body.get("messages") or []))
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("cache_control"))
