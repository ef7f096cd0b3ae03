"""Helpers for the memory tests: a `Memory` over a temporary data dir without an app,
and checks on what the fake Anthropic API received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.memory import Memory
from agents.services import AgentInfo
from agents.tools.toolbox import Toolbox, ToolResult
from bot.core.events import EventLog
from config.settings import load_settings
from tests.fakes.anthropic_api import Call, unwrap


def memory_at(data_dir: Path, **env: str) -> Memory:
    """Memory without an app or a model (tools, search, prompt and capture need none)."""
    settings = load_settings(None, {"SWITCHBOARD_DATA_DIR": str(data_dir), **env})
    return Memory(data_dir, settings, None, EventLog(None))  # type: ignore[arg-type]


def toolbox(memory: Memory, agent_id: str = "coordinator") -> Toolbox:
    return Toolbox(memory.tools(AgentInfo(agent_id, "coordinator")))


async def call(box: Toolbox, name: str, **args: Any) -> ToolResult:
    """The tool's result, its text without the untrusted block's delimiter lines."""
    result = await box.call(name, args)
    result.text = unwrap(result.text)
    return result


def assert_tool_pairs_valid(calls: list[Call]) -> None:
    """Every tool_result answers a tool_use of the assistant message just before it,
    and every tool_use is answered in the next message: what the real API enforces."""
    for c in calls:
        messages = c.messages
        for i, message in enumerate(messages):
            blocks = message["content"] if isinstance(message["content"], list) else []
            results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
            if results:
                previous = messages[i - 1]["content"] if i > 0 else []
                uses = {b["id"] for b in previous if b.get("type") == "tool_use"}
                assert results <= uses, f"orphaned tool_result in message {i}"
            uses_here = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            if uses_here and i + 1 < len(messages):
                nxt = messages[i + 1]["content"]
                answered = {b["tool_use_id"] for b in nxt if b.get("type") == "tool_result"}
                assert uses_here <= answered, f"unanswered tool_use in message {i}"
