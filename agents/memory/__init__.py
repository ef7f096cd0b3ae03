"""Per-agent markdown memory (issue 6): tools, the prompt prefix, search, compaction,
auto-capture and maintenance.

`install_memory(services, settings)` is the one call the composition root makes: it
adds the memory tools to every agent's toolbox (`Services.tool_factories`), the
memory part to every system prompt (`Services.prompt_parts`), and sets
`Services.memory`, the hooks the agent loop calls (capture what people say, reflect
when a worker publishes, compact a long conversation). Each agent's files live in
`<data_dir>/agents/<agent_id>/`; this package never reaches outside that folder.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.loop.prompts import agent_dir
from agents.memory.agent import AgentMemory
from agents.memory.capture import PERSON_KINDS, TEAM_KINDS, captures, decisions_in
from agents.memory.compaction import Compactor
from agents.memory.consolidate import Consolidator
from agents.memory.durable import SYNCER
from agents.memory.embedding import MODEL, Embedder
from agents.memory.files import AgentFiles, MemoryRefused, archive_slug
from agents.memory.maintenance import distil
from agents.memory.prompt import PromptCache, turn_context
from agents.memory.search import MemoryIndex
from agents.memory.shared import Shared
from agents.memory.tools import memory_tools
from agents.model.blocks import Messages
from agents.services import AgentInfo, Services
from agents.tools.toolbox import Tool, Toolbox
from bot.core.bounded import Bounded
from bot.core.messages import FROM_PERSON, UNVERIFIED, BusMessage
from bot.inbox.people import People
from config.settings import Settings

if TYPE_CHECKING:
    from agents.model.llm import Provider
    from bot.core.events import EventLog

__all__ = ["AgentMemory", "Memory", "install_memory"]

log = logging.getLogger(__name__)

#: agents whose memory stays open at once (at least twice SWITCHBOARD_MAX_WORKERS): an
#: open one holds ~330 KB resident (its index's SQLite connection and page cache)
OPEN_AGENTS_MAX = 32


def _close_index(agent_id: str, memory: AgentMemory) -> None:
    """An agent's memory let go of: its index closes (a call still holding it reopens it)."""
    memory.index.close()


class Memory:
    """The memory of every agent of one data dir (implements `services.MemoryHooks`)."""

    def __init__(
        self,
        data_dir: Path,
        settings: Settings,
        llm: Provider,
        events: EventLog,
        people: People | None = None,
    ):
        self.data_dir = data_dir
        self.people = people
        self.consolidator: Consolidator | None = None  # set by install_memory (needs the store)
        self.settings = settings
        self.llm = llm
        self.events = events
        #: the agents whose memory is open (files, search index, its SQLite connection), by
        #: agent id, most recently used last: the coordinator and the workers lately at
        #: work. Bounded: at `_open_max` the least recently used is closed (every worker
        #: ever spawned would otherwise keep an index open); its next use reopens it.
        self._open_max = max(OPEN_AGENTS_MAX, 2 * settings.max_workers)
        self._agents: Bounded[str, AgentMemory] = Bounded(self._open_max, _close_index)
        self._prompts = PromptCache()  # bounded: see PromptCache
        self._opening = threading.Lock()  # tools open an agent's memory from worker threads
        s = settings
        #: the meaning half of search: the process's model, loaded at a first search
        self.embedder: Embedder | None = MODEL if s.memory_search == "hybrid" else None
        self.shared = Shared(
            data_dir, s.memory_file_max_bytes, s.timezone, s.memory_rescan_seconds, self.embedder
        )
        self.compactor = Compactor(
            llm, events, self.agent, settings.compact_at_tokens, settings.compact_keep_tokens
        )

    def agent(self, agent_id: str) -> AgentMemory:
        with self._opening:
            memory = self._agents.get(agent_id)
            if memory is None:
                return self._open(agent_id)
            self._agents.touch(agent_id)
            return memory

    def _open(self, agent_id: str) -> AgentMemory:
        s = self.settings
        files = AgentFiles(agent_dir(self.data_dir, agent_id), s.memory_file_max_bytes, s.timezone)
        index = MemoryIndex(files, s.memory_rescan_seconds, embedder=self.embedder)
        memory = AgentMemory(agent_id, files, index, s.memory_inline_bytes, self.shared)
        self._agents[agent_id] = memory  # past `_open_max`: the least recently used closes
        return memory

    # -- seams of Services ---------------------------------------------------------------
    def tools(self, info: AgentInfo) -> list[Tool]:
        agent_id = info.agent_id

        def written(tool: str) -> None:
            self.events.emit("memory.written", agent_id, tool=tool)

        source = f"in {info.conversation}" if info.conversation else ""
        return memory_tools(
            lambda: self.agent(agent_id), written, self._person_named, source, _archives_of(info)
        )

    def _person_named(self, name: str) -> str | None:
        person = self.people.named(name) if self.people is not None else None
        return person.name if person is not None else None

    def prompt(self, info: AgentInfo, person: str | None) -> str:
        memory = self.agent(info.agent_id)
        return self._prompts.get(memory, person, self.settings.memory_prompt_tokens)

    def context(
        self, agent_id: str, people: list[str], system: str | None, shown: str
    ) -> list[str]:
        """What a turn adds to a conversation whose system prompt is `system`."""
        budget = self.settings.memory_prompt_tokens
        return turn_context(self.agent(agent_id), people, system, shown, budget)

    # -- hooks of the agent loop ----------------------------------------------------------
    def heard(self, agent_id: str, msg: BusMessage) -> None:
        """Auto-capture from a person's message the agent just took in (mail no server
        vouched for adds nothing to what the team shares)."""
        kinds = PERSON_KINDS - TEAM_KINDS if msg.meta.get(UNVERIFIED) else PERSON_KINDS
        found = captures(msg.text, kinds) if msg.kind in FROM_PERSON else []
        if not found:
            return
        person = msg.meta.get("person") or msg.meta.get("sender_id")
        display = msg.meta.get("sender") or person or "someone"
        for item in found:
            if item.kind == "place" and person and self.people is not None:
                if self.people.set_zone(person, item.value):
                    self.events.emit("person.timezone", agent_id, person=person, zone=item.value)
        try:
            written = self.agent(agent_id).capture(found, person, display, msg.conversation or "")
        except (MemoryRefused, OSError) as exc:  # a full file must not stop the conversation
            log.warning("auto-capture for %s failed: %s", agent_id, exc)
            return
        if written:
            self.events.emit("memory.captured", agent_id, files=written, person=person)

    def said(self, agent_id: str, text: str, conversation: str | None) -> None:
        """Auto-capture of the decisions an agent states in its own reply."""
        found = decisions_in(text)
        if not found:
            return
        try:
            written = self.agent(agent_id).capture(found, None, agent_id, conversation or "")
        except (MemoryRefused, OSError) as exc:
            log.warning("auto-capture of %s's decision failed: %s", agent_id, exc)
            return
        if written:
            self.events.emit("memory.captured", agent_id, files=written, person=None)

    def archive(self, agent_id: str, key: str, messages: list[Any]) -> str:
        return self.agent(agent_id).files.archive(key, messages)

    def published(self, agent_id: str, task: str, result: str) -> None:
        try:
            self.agent(agent_id).published(task, result)
        except (MemoryRefused, OSError) as exc:
            log.warning("reflection of %s failed: %s", agent_id, exc)
            return
        self.events.emit("memory.written", agent_id, tool="publish")

    def learned(self, agent_id: str, findings: list[tuple[str, str]], source: str) -> list[str]:
        written: list[str] = []
        for topic, fact in findings:
            try:
                relative = self.shared.add_note(topic, fact, source)
            except (MemoryRefused, OSError) as exc:  # one full topic must not lose the rest
                log.warning("a finding of %s was not stored: %s", agent_id, exc)
                continue
            if relative is not None and relative not in written:
                written.append(relative)
        return written

    def over_budget(self, system: str, tools: list[dict[str, Any]], messages: Messages) -> bool:
        return self.compactor.over_budget(system, tools, messages)

    async def compact(
        self, agent_id: str, key: str, system: str, toolbox: Toolbox, messages: Messages
    ) -> Messages:
        return await self.compactor.compact(agent_id, key, system, toolbox, messages)

    # -- maintenance (for the scheduler) -------------------------------------------------
    async def distil(self, agent_id: str) -> str:
        """Distil an agent's past daily logs into its MEMORY.md (run it nightly)."""
        text = await distil(self.agent(agent_id), self.llm)
        self.events.emit("memory.distilled", agent_id, result=text)
        return text

    async def distil_all(self) -> None:
        """The nightly job: distil every agent that has a memory directory."""
        root = self.data_dir / "agents"
        for path in sorted(root.iterdir()) if root.is_dir() else []:
            if path.is_dir() and (path / "memory").is_dir():
                try:
                    await self.distil(path.name)
                except Exception as exc:  # one agent's failure must not stop the others
                    self.events.emit("memory.distil_failed", path.name, error=str(exc))

    def close(self) -> None:
        for memory in list(self._agents.values()):
            memory.index.close()
        self.shared.close()
        SYNCER.drain(timeout=5.0)  # a clean stop leaves what memory wrote synced


def install_memory(services: Services, settings: Settings) -> Memory:
    people = services.human.people
    memory = Memory(services.data_dir, settings, services.llm, services.events, people)
    memory.consolidator = Consolidator(services.store, memory.shared, services.llm, services.events)
    moved = memory.shared.migrate_profiles(lambda stem: _person_of(people, stem))
    if moved:
        services.events.emit("memory.profiles_migrated", "", profiles=moved)
    services.tool_factories.append(memory.tools)
    services.prompt_parts.append(memory.prompt)
    services.memory = memory
    return memory


def _person_of(people: People, stem: str) -> str:
    person = people.named(stem)
    return person.name if person is not None else stem


def _archives_of(info: AgentInfo) -> Callable[[str], bool] | None:
    """Which archived transcripts an agent's `memory_search` shows (scope): a worker its
    own, a coordinator session those of its own conversation; an agent serving no
    conversation (None) every one."""
    if info.conversation is None:
        return None
    own = f"agents/{info.agent_id}/archive/"
    stem = archive_slug(info.conversation or "") + "-"

    def visible(path: str) -> bool:
        if info.kind != "coordinator":
            return path.startswith(own)
        return path.startswith(own) and path.rsplit("/", 1)[-1].startswith(stem)

    return visible
