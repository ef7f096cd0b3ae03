"""Every configured MCP server, and their tools as each agent sees them.

The registry starts one `McpClient` per `[[mcp_servers]]` entry, checks each tool
against the Anthropic API's rules (name `^[a-zA-Z0-9_-]{1,64}$` once prefixed
`<server>__`, an object input schema that is itself valid JSON Schema) and reports
a tool it cannot offer instead of failing, and keeps each server's state in the
store for `switchboard status`. Agents get a `ToolSource` whose tools are sorted by
name, so their list is byte-stable between turns; `version` moves only when a
server's tools changed. A server kept for workers by name gives a worker of that name
its tools freely only when the operator started it (a config trigger); started from a
person's conversation, each call waits for an approver (docs/security.md).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.loop.step import Step
from agents.services import AgentInfo
from agents.tools.toolbox import Tool, ToolResult, ToolSpec
from bot.core.events import EventLog
from bot.core.lazy import lazy
from bot.core.names import operator_conversation
from bot.core.tasks import cancel_all
from bot.store.core import Store
from config.tools import McpServerConfig

if TYPE_CHECKING:  # the MCP SDK loads in `_connection`, only with [[mcp_servers]]
    import jsonschema
    from mcp import types

    from agents.mcp.client import McpClient
else:  # loaded at the first schema check (~2 MB, ~0.1 s)
    jsonschema = lazy("jsonschema")

API_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
STATUS_PREFIX = "mcp:"
SEPARATOR = "__"

#: How a gated tool is asked for instead of run: (agent, offered tool, arguments, step).
Gate = Callable[[AgentInfo, "McpTool", dict[str, Any], Step], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class McpTool:
    server: str
    name: str  # the server's own name for it
    spec: ToolSpec  # as offered: `<server>__<name>`
    needs_approval: bool


class McpRegistry:
    def __init__(
        self, configs: list[McpServerConfig], store: Store, events: EventLog, max_chars: int
    ) -> None:
        self.store = store
        self.events = events
        self.max_chars = max_chars
        self.version = 0
        self.clients = {c.name: _connection(c, self._changed) for c in configs}
        self.offered: dict[str, McpTool] = {}
        self.refused: dict[str, dict[str, str]] = {}  # server -> tool -> why not offered
        self.gate: Gate | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        for client in self.clients.values():
            self._publish(client)
            self._tasks.append(asyncio.create_task(client.run(), name=f"mcp:{client.name}"))

    async def stop(self) -> None:
        await cancel_all(self._tasks)
        self._tasks.clear()
        for client in self.clients.values():
            client.state = "stopped"
            self._publish(client)

    async def wait_connected(self, seconds: float) -> None:
        async with asyncio.timeout(seconds):
            for client in self.clients.values():
                await client.connected.wait()

    def _changed(self, client: McpClient) -> None:
        before = self._fingerprint(client.name)
        self._offer(client)
        after = self._fingerprint(client.name)
        if before != after:
            self.version += 1
        self.events.emit(
            f"mcp.{client.state}",
            "",
            server=client.name,
            reason=client.reason or None,
            tools=len(after),
        )
        self._publish(client)

    def _fingerprint(self, server: str) -> list[str]:
        return sorted(
            json.dumps(t.spec.to_api(), sort_keys=True)
            for t in self.offered.values()
            if t.server == server
        )

    def _offer(self, client: McpClient) -> None:
        """Replace the server's offered tools with its current list (when connected)."""
        self.offered = {n: t for n, t in self.offered.items() if t.server != client.name}
        self.refused[client.name] = {}
        if client.state != "connected":
            return  # its tools vanish with it; a call meanwhile would only fail
        for tool in client.tools:
            problem = _problem(client.name, tool)
            if problem is not None:
                self.refused[client.name][tool.name] = problem
                self.events.emit(
                    "mcp.tool_refused", "", server=client.name, tool=tool.name, reason=problem
                )
                continue
            offered = self._make(client.config, tool)
            self.offered[offered.spec.name] = offered

    def _make(self, config: McpServerConfig, tool: types.Tool) -> McpTool:
        name = f"{config.name}{SEPARATOR}{tool.name}"
        needs = any(fnmatch.fnmatchcase(tool.name, glob) for glob in config.approval)
        description = (tool.description or tool.title or tool.name).strip()
        if needs:
            description += " (Needs a person's approval: the call waits until one says yes.)"
        return McpTool(
            config.name, tool.name, ToolSpec(name, description, tool.input_schema), needs
        )

    def _publish(self, client: McpClient) -> None:
        tools = sum(1 for t in self.offered.values() if t.server == client.name)
        self.store.set_kv(
            STATUS_PREFIX + client.name,
            json.dumps(
                {
                    "state": client.state,
                    "reason": client.reason,
                    "tools": tools,
                    "transport": client.config.transport,
                    "restarts": client.restarts,
                    "refused": self.refused.get(client.name, {}),
                    "updated": time.time(),
                }
            ),
        )

    # -- what agents see ---------------------------------------------------------------
    def source(self, info: AgentInfo) -> McpSource:
        return McpSource(self, info)

    def visible(self, info: AgentInfo) -> list[McpTool]:
        tools = [t for t in self.offered.values() if _serves(self.clients[t.server].config, info)]
        return sorted(tools, key=lambda t: t.spec.name)

    async def call(self, tool: McpTool, args: dict[str, Any]) -> ToolResult:
        """Run the call now (approval already given, or none needed)."""
        client = self.clients[tool.server]
        return await client.answer(tool.spec.name, tool.name, args, self.max_chars)


class McpSource:
    """The MCP tools one agent sees (a `ToolSource` for its toolbox)."""

    def __init__(self, registry: McpRegistry, info: AgentInfo) -> None:
        self.registry = registry
        self.info = info

    @property
    def version(self) -> int:
        return self.registry.version

    def tools(self) -> list[Tool]:
        visible = self.registry.visible(self.info)
        return [Tool(t.spec, step_handler=McpCall(self.registry, self.info, t)) for t in visible]


class McpCall:
    """One MCP tool's handler in one agent's toolbox: a small object per tool per
    session (the spec is the registry's, shared), not a closure with its cells."""

    __slots__ = ("gated", "info", "registry", "tool")

    def __init__(self, registry: McpRegistry, info: AgentInfo, tool: McpTool) -> None:
        self.registry = registry
        self.info = info
        self.tool = tool
        self.gated = tool.needs_approval or _named_for(registry.clients[tool.server].config, info)

    async def __call__(self, args: dict[str, Any], step: Step) -> ToolResult:
        registry, tool = self.registry, self.tool
        if self.gated:
            if registry.gate is None:  # fail closed: nobody could approve it
                return ToolResult(
                    f"Error: {tool.spec.name} needs approval, and approvals are not "
                    "available here.",
                    is_error=True,
                )
            return await registry.gate(self.info, tool, args, step)
        return await registry.call(tool, args)


def _connection(config: McpServerConfig, changed: Callable[[McpClient], None]) -> McpClient:
    """The client of one server: the MCP SDK (~0.5 s, ~40 MB) loads here."""
    from agents.mcp.client import McpClient

    return McpClient(config, changed)


def _serves(config: McpServerConfig, info: AgentInfo) -> bool:
    for who in config.agents:
        if who == "*" or who == info.kind or (who == "workers" and info.kind == "worker"):
            return True
        if who.lower() == info.agent_id.lower():
            return True
    return False


def _named_for(config: McpServerConfig, info: AgentInfo) -> bool:
    """A server kept for workers by name (`agents = ["deployer"]`) serving a worker that a
    person's conversation started: anyone can name a worker so, so each of its calls
    waits for an approver; one the operator started (a config trigger) calls freely."""
    if info.kind != "worker" or operator_conversation(info.conversation):
        return False
    generic = {"*", "workers", info.kind}
    return not any(who in generic for who in config.agents)


def _problem(server: str, tool: types.Tool) -> str | None:
    """Why the API would refuse this tool, or None."""
    name = f"{server}{SEPARATOR}{tool.name}"
    if not API_TOOL_NAME.match(name):
        return f"the name {name!r} does not fit the API's rule ^[a-zA-Z0-9_-]{{1,64}}$"
    schema = tool.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "its input schema is not a JSON object schema (type: object)"
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message}"
    return None
