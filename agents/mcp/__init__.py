"""MCP tools for every agent: `[[mcp_servers]]` connected through the official SDK.

`install_mcp` builds the registry and hands each agent its tool source; the app
starts and stops it with everything else.
"""

from __future__ import annotations

from agents.mcp.registry import McpRegistry, McpSource, McpTool
from agents.services import Services
from config.settings import Settings

__all__ = ["McpRegistry", "McpSource", "McpTool", "install_mcp"]


def install_mcp(services: Services, settings: Settings) -> McpRegistry:
    registry = McpRegistry(
        settings.mcp_servers, services.store, services.events, settings.tool_result_max_chars
    )
    services.tool_sources.append(registry.source)
    return registry
