"""One LLM conversation of one agent as it is stored: its messages, kept acceptable
to the Messages API as they grow (roles alternate; nothing follows a tool result in
the same turn that would read as the turn's end)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agents.loop.turns import closed, has_results
from agents.model.blocks import Block, Messages, blocks_of, stored, text_block

if TYPE_CHECKING:
    from bot.store.core import Store


@dataclass(slots=True)
class Conversation:
    """One LLM conversation of one agent, as persisted."""

    agent: str
    key: str
    target: str | None
    messages: Messages = field(default_factory=list)
    #: (opening, text) of the system prompt snapshot read or built for this object
    #: (agents/loop/prompts.py), so a turn reads it from the store once, not at each use
    prompt: tuple[str, str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, store: Store, agent: str, key: str, target: str | None = None) -> Conversation:
        """The conversation as the store kept it (a new one: empty), aimed at `target`
        when given, else where it was saved with."""
        messages, saved = store.agents.load_conversation(agent, key)
        return cls(agent, key, target or saved, stored(messages))

    def add_text(self, text: str) -> None:
        self.add_blocks([text_block(text)])

    def add_blocks(self, blocks: Sequence[Block]) -> None:
        """Append to the trailing user message, or start one (roles must alternate)."""
        if not blocks:
            return
        if self.messages and self.messages[-1]["role"] == "user":
            last = self.messages[-1]
            content = last["content"]
            if isinstance(content, str):
                content = last["content"] = blocks_of(content)
            content.extend(blocks)
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
