"""Archived conversations (`.jsonl`, one API message a line) as searchable text:
their turns as `role: text`, cut into short `## <file>` sections."""

from __future__ import annotations

import json

TRANSCRIPT_CHUNK = 600  # chars: short sections rank fast (bench_people: p95 6.2 -> 2.0 ms on 25 MB)


def transcript_sections(relative: str, text: str) -> list[str]:
    """An archived conversation as `## <file>` chunks of its turns' text."""
    head = f"## {relative.rsplit('/', 1)[-1].removesuffix('.jsonl')}"
    sections: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines():
        turn = transcript_turn(line)
        if not turn:
            continue
        if current and size + len(turn) > TRANSCRIPT_CHUNK:
            sections.append("\n".join([head, *current]))
            current, size = [], 0
        current.append(turn)
        size += len(turn)
    if current:
        sections.append("\n".join([head, *current]))
    return sections


def transcript_turn(line: str, result_chars: int = 500) -> str:
    """One JSON line of an archive (an API message) as `role: text`; '' if unreadable."""
    try:
        message = json.loads(line)
        role, content = message["role"], message["content"]
    except (ValueError, KeyError, TypeError):
        return ""
    if isinstance(content, str):
        return f"{role}: {content}"
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            parts.append(f"(called {block.get('name')} {json.dumps(block.get('input'))[:300]})")
        elif block.get("type") == "tool_result":
            result = block.get("content")
            result = result if isinstance(result, str) else json.dumps(result)
            parts.append(f"(result: {result[:result_chars]})")
    text = " ".join(p for p in parts if p)
    return f"{role}: {text}" if text else ""
