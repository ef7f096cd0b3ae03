"""What every agent is given by the composition root: the core's services and limits.

Agents reach the outside world only through these: the store, the bus, the human
node (outbox, open questions), the event log and the LLM provider. Tool factories
added by other parts (memory, triggers) extend every agent's toolbox.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.core.bus import Bus
from bot.core.events import EventLog
from bot.core.messages import BusMessage, Target
from bot.inbox.human import HumanNode
from bot.store.core import Store

if TYPE_CHECKING:
    from agents.model.blocks import Messages
    from agents.model.llm import Provider
    from agents.tools.toolbox import Guard, Tool, Toolbox, ToolSource


@dataclass(frozen=True, slots=True)
class Limits:
    max_workers: int = 8
    max_turns: int = 40
    llm_retry_base: float = 2.0
    llm_retry_max: float = 300.0
    file_max_bytes: int = 20_000_000


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """Who a tool factory is building tools for."""

    agent_id: str
    kind: str  # coordinator | worker
    #: the conversation the tools serve (a coordinator session's key, a worker's origin)
    conversation: str | None = None
    #: the workspace directory name below <data_dir>/workspaces (agents/tools/files.py)
    workspace: str | None = None


ToolFactory = Callable[[AgentInfo], "list[Tool]"]
#: Tools that change at run time (MCP servers): one source per agent
SourceFactory = Callable[[AgentInfo], "ToolSource"]
PromptPart = Callable[[AgentInfo, str | None], str]


class MemoryHooks(Protocol):
    """What the agent loop asks of memory (`agents/memory` implements it)."""

    def heard(self, agent_id: str, msg: BusMessage) -> None:
        """A person's message was taken into the agent's conversation (auto-capture)."""

    def said(self, agent_id: str, text: str, conversation: str | None) -> None:
        """The agent wrote `text` in a reply (its own decisions are captured)."""

    def archive(self, agent_id: str, key: str, messages: Messages) -> str:
        """Keep a whole conversation where memory_search finds it (a fresh start);
        returns the archive's path relative to the agent's directory."""

    def published(self, agent_id: str, task: str, result: str) -> None:
        """A worker published its result (it reflects into its memory)."""

    def learned(self, agent_id: str, findings: list[tuple[str, str]], source: str) -> list[str]:
        """(topic, fact) pairs a worker shares with the team, `source` saying where they
        came from; returns the team-knowledge files written (runs in a thread)."""
        ...

    def context(
        self, agent_id: str, people: list[str], system: str | None, shown: str
    ) -> list[str]:
        """Marked blocks for this turn: the people's profiles, memory written since the
        conversation's `system` prompt was built, leaving out what `shown` holds."""
        ...

    def over_budget(self, system: str, tools: list[dict[str, Any]], messages: Messages) -> bool:
        """The next request nears the context budget: compact first."""

    async def compact(
        self, agent_id: str, key: str, system: str, toolbox: Toolbox, messages: Messages
    ) -> Messages:
        """Flush durable memories, archive, summarise old turns; the shorter conversation."""


@dataclass(slots=True)
class Services:
    store: Store
    bus: Bus
    events: EventLog
    human: HumanNode
    llm: Provider
    data_dir: Path
    limits: Limits = field(default_factory=Limits)
    tool_factories: list[ToolFactory] = field(default_factory=list)
    tool_sources: list[SourceFactory] = field(default_factory=list)
    prompt_parts: list[PromptPart] = field(default_factory=list)
    memory: MemoryHooks | None = None
    #: gated tool calls (agents/tools/approvals.py), when MCP servers are configured
    approvals: Any = None
    #: the scope check each agent's toolbox runs before a call (agents/tools/scope_guard.py)
    guard_for: Callable[[Services, AgentInfo], Guard] | None = None

    @property
    def home(self) -> Target | None:
        return self.human.home

    def guard(self, info: AgentInfo) -> Guard | None:
        return self.guard_for(self, info) if self.guard_for is not None else None

    def sources_for(self, info: AgentInfo) -> list[ToolSource]:
        return [make(info) for make in self.tool_sources]
