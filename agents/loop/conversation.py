"""One LLM conversation of one agent as it is stored: its messages, kept acceptable
to the Messages API as they grow (roles alternate; nothing follows a tool result in
the same turn that would read as the turn's end)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.loop.turns import closed, has_results


@dataclass(slots=True)
class Conversation:
    """One LLM conversation of one agent, as persisted."""

    agent: str
    key: str
    target: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)

    def add_text(self, text: str) -> None:
        self.add_blocks([{"type": "text", "text": text}])

    def add_blocks(self, blocks: list[dict[str, Any]]) -> None:
        """Append to the trailing user message, or start one (roles must alternate)."""
        if not blocks:
            return
        if self.messages and self.messages[-1]["role"] == "user":
            last = self.messages[-1]
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"].extend(blocks)
        else:
            self.messages.append({"role": "user", "content": list(blocks)})

    def add_clock(self, line: str) -> None:
        """The `[Now: ...]` line, unless the trailing user turn holds tool results: text
        right after a tool_result teaches the model to end its turn there (the next
        person's turn carries the clock instead)."""
        last = self.messages[-1] if self.messages else None
        if not (last and last["role"] == "user" and has_results(last) and not closed(last)):
            self.add_text(line)

    @property
    def awaits_model(self) -> bool:
        """A user turn is last, and no runtime note closed it (agents/loop/turns.py)."""
        return (
            bool(self.messages)
            and self.messages[-1]["role"] == "user"
            and not closed(self.messages[-1])
        )
