"""The gated tool of `switchboard eval`: a real MCP server (the SDK's own, over stdio)
with an `ops` team's two tools. Run as `python -m bot.evaluation.ops_server`.

Each call it runs is appended to $EVAL_CALLS (one JSON line), so the evaluation counts
what really ran, not what the model says ran.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("ops", log_level="ERROR")
NEW_PID = 4242  # in the restart's result: an answer that quotes it saw the tool run


def _record(tool: str, name: str) -> None:
    path = os.environ.get("EVAL_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "name": name}) + "\n")


@server.tool()
def restart_service(name: str) -> str:
    """Restart a service by name (needs a person's approval)."""
    _record("restart_service", name)
    return f"Restarted {name}; its new pid is {NEW_PID}."


@server.tool()
def service_status(name: str) -> str:
    """Whether a service is up."""
    _record("service_status", name)
    return f"{name} is up."


if __name__ == "__main__":
    server.run("stdio")
