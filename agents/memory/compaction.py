"""Compaction: a conversation nearing its token budget is shortened, forgetting
nothing important (reference 000 section 7.2, reference 001 "context window guard").

In order: (1) a memory-flush turn — the model sees the whole conversation plus
"store durable memories now" and may call only the memory tools; (2) the whole
conversation is archived to `<agent dir>/archive/<conversation>-<time>.jsonl`, never
deleted; (3) the old turns are summarised by a model call and replaced by that
summary, while the last turns stay verbatim. The cut is always before a user
message; tool results whose call was summarised away become plain text, so every
`tool_use`/`tool_result` pair the API sees stays intact.

Sizes are estimated at 4 characters per token of the request's JSON (documented;
there is no offline tokenizer for Claude).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents.loop.media import media_tokens
from agents.memory.agent import AgentMemory
from agents.memory.prompt import CHARS_PER_TOKEN
from agents.memory.tools import NAMES as MEMORY_TOOLS
from agents.model.blocks import (
    Block,
    Blocks,
    Messages,
    ToolResultBlock,
    blocks_of,
    text_block,
    text_in,
)
from agents.model.llm import CallLabel, ModelError, ModelUnavailable
from agents.tools.toolbox import Toolbox, ToolResult, result_block
from bot.core.events import EventLog

if TYPE_CHECKING:
    from agents.model.llm import Provider

log = logging.getLogger(__name__)


FLUSH = (
    "[Switchboard] This conversation is nearing compaction: its older turns will soon be "
    "replaced by a summary. Store durable memories now: use remember, reflect or learn_fact "
    "for anything worth keeping (facts, decisions, preferences, open tasks). Only the memory "
    "tools work during this step; do not answer the conversation yet. Reply DONE when finished."
)
SUMMARISE = (
    "You summarise the older part of a conversation between a team's assistant and the "
    "people it works with, so the conversation can go on without it. Keep decisions, facts, "
    "numbers, names, preferences, open questions and tasks in progress; drop greetings and "
    "small talk. Write a compact summary in plain prose or bullets; nothing else."
)
SUMMARY_HEAD = "[Summary of the earlier conversation (full text archived in {archive})]\n"
FLUSH_ROUNDS = 3
_RESULT_CHARS = 2_000  # per tool result in the transcript the summariser reads


#: the JSON size of a tool list, by the list's id (a toolbox keeps one list until its
#: tools change; the list is held here so its id is not reused); at most _SIZES_MAX
_tool_sizes: dict[int, tuple[list[dict[str, Any]], int, int]] = {}
_SIZES_MAX = 512


def _tools_size(tools: list[dict[str, Any]]) -> int:
    held = _tool_sizes.get(id(tools))
    if held is not None and held[0] is tools and len(tools) == held[1]:
        return held[2]
    size = len(json.dumps(tools))
    if len(_tool_sizes) >= _SIZES_MAX:
        del _tool_sizes[next(iter(_tool_sizes))]
    _tool_sizes[id(tools)] = (tools, len(tools), size)
    return size


def estimate_tokens(system: str, tools: list[dict[str, Any]], messages: Messages) -> int:
    size = len(system) + _tools_size(tools) + len(json.dumps(messages))
    return size // CHARS_PER_TOKEN + media_tokens(messages)


class Compactor:
    def __init__(
        self,
        llm: Provider,
        events: EventLog,
        memory_for: Callable[[str], AgentMemory],
        compact_at: int,
        keep: int,
    ) -> None:
        self.llm = llm
        self.events = events
        self.memory_for = memory_for
        self.compact_at = compact_at
        self.keep = keep

    def over_budget(self, system: str, tools: list[dict[str, Any]], messages: Messages) -> bool:
        return estimate_tokens(system, tools, messages) >= self.compact_at

    async def compact(
        self, agent_id: str, key: str, system: str, toolbox: Toolbox, messages: Messages
    ) -> Messages:
        """The conversation after a flush turn and a summary of its old turns; the
        same messages when there is nothing old enough or the model fails."""
        cut = choose_cut(messages, self.keep)
        if cut is None or len(json.dumps(messages[:cut])) < self.keep * CHARS_PER_TOKEN // 4:
            return messages  # too little is old: a summary would not make room
        before = estimate_tokens(system, toolbox.specs, messages)
        try:
            calls = await self._flush(agent_id, system, toolbox, messages)
            self.events.emit("memory.flushed", agent_id, conversation=key, tool_calls=calls)
            files = self.memory_for(agent_id).files
            archive = await asyncio.to_thread(files.archive, key, messages)  # the whole talk
            summary = await self._summarise(agent_id, messages[:cut])
        except (ModelUnavailable, ModelError) as exc:
            self.events.emit("memory.compaction_failed", agent_id, conversation=key, error=str(exc))
            return messages
        compacted = with_summary(SUMMARY_HEAD.format(archive=archive) + summary, messages[cut:])
        self.events.emit(
            "memory.compacted",
            agent_id,
            conversation=key,
            archive=archive,
            summarised=cut,
            kept=len(messages) - cut,
            tokens_before=before,
            tokens_after=estimate_tokens(system, toolbox.specs, compacted),
        )
        return compacted

    async def _flush(self, agent_id: str, system: str, toolbox: Toolbox, messages: Messages) -> int:
        """The memory-flush turn, on a copy of the conversation; returns the tool calls run."""
        convo = _with_note(messages, FLUSH)
        calls = 0
        for _ in range(FLUSH_ROUNDS):
            response = await self.llm.complete(
                system, toolbox.specs, convo, CallLabel(agent_id, "memory")
            )
            if not response.tool_calls:
                break
            results: Blocks = []
            for call in response.tool_calls:
                calls += 1
                if call["name"] in MEMORY_TOOLS:
                    self.events.emit("tool.called", agent_id, tool=call["name"], flush=True)
                    result = await toolbox.call(call["name"], call["input"])
                else:
                    result = ToolResult("Not run: only memory tools work now.", is_error=True)
                results.append(result_block(call["id"], result))
            convo = [
                *convo,
                {"role": "assistant", "content": response.content},
                {"role": "user", "content": results},
            ]
        return calls

    async def _summarise(self, agent_id: str, old: Messages) -> str:
        transcript = render_transcript(old)[-self.compact_at * CHARS_PER_TOKEN :]
        response = await self.llm.complete(
            SUMMARISE,
            [],
            [{"role": "user", "content": transcript}],
            CallLabel(agent_id, "memory"),
            once=True,
        )
        return response.text or "(the model gave no summary)"


def choose_cut(messages: Messages, keep_tokens: int) -> int | None:
    """Where the kept tail starts: the earliest user message from which the tail fits
    in `keep_tokens` (at least the last user message), never index 0."""
    budget = keep_tokens * CHARS_PER_TOKEN
    size = 0
    cut: int | None = None
    for i in range(len(messages) - 1, 0, -1):
        size += len(json.dumps(messages[i]))
        if messages[i]["role"] != "user":
            continue
        if size > budget and cut is not None:
            break
        cut = i
    return cut


def with_summary(summary: str, kept: Messages) -> Messages:
    """`kept` led by the summary; its first message's orphaned tool results become text."""
    fixed: Blocks = [text_block(summary)]
    for block in blocks_of(kept[0]["content"]):
        if block["type"] == "tool_result":
            fixed.append(text_block(f"[Result of an earlier tool call]: {_text(block)}"))
        else:
            fixed.append(block)
    return [{"role": "user", "content": fixed}, *kept[1:]]


def render_transcript(messages: Messages) -> str:
    lines: list[str] = []
    for message in messages:
        for block in blocks_of(message["content"]):
            if block["type"] != "thinking" and block["type"] != "redacted_thinking":
                lines.append(f"{message['role']}: {_describe(block)}")
    return "\n".join(lines)


def _describe(block: Block) -> str:
    if block["type"] == "tool_use":
        return f"(called {block['name']} {json.dumps(block['input'])[:_RESULT_CHARS]})"
    if block["type"] == "tool_result":
        return f"(tool result) {_text(block)[:_RESULT_CHARS]}"
    return text_in(block)


def _text(block: ToolResultBlock) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(text_in(b) for b in content)
    return content


def _with_note(messages: Messages, note: str) -> Messages:
    """A copy of the conversation whose trailing user message ends with `note`."""
    block = text_block(note)
    if not messages or messages[-1]["role"] != "user":
        return [*messages, {"role": "user", "content": [block]}]
    blocks = blocks_of(messages[-1]["content"])
    return [*messages[:-1], {"role": "user", "content": [*blocks, block]}]
