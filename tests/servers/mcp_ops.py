"""A real MCP server for the tests, written with the SDK's server (FastMCP, called
`MCPServer` in mcp 2.x). It lives in its own folder: run as a script from tests/,
the package `tests/email` would hide the standard library's `email`. Run as a
subprocess:

    python tests/servers/mcp_ops.py stdio [--garbage] [--bad-tools]
    python tests/servers/mcp_ops.py http PORT     ($REQUIRE_AUTH: the Authorization it wants)

Every call it receives is appended to $CALLS_FILE (one JSON line), so a test can
count what the server really ran, across kills and restarts.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("ops", log_level="ERROR")

# a 1x1 PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def record(tool: str, **args: Any) -> None:
    at = time.time()  # when the call reached the server (bench_tools reads it)
    path = os.environ.get("CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            row = {"tool": tool, "args": args, "pid": os.getpid(), "at": at}
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    record("echo", text=text)
    return text


@server.tool()
def ping(n: int) -> str:
    """Answers at once, records nothing (the benchmark's call)."""
    return f"pong {n}"


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    record("add", a=a, b=b)
    return {"sum": a + b}


@server.tool()
def deploy_status(service: str) -> str:
    """The deployment status of a service."""
    record("deploy_status", service=service)
    return f"{service}: deployed v42, healthy"


@server.tool()
def restart_service(service: str) -> str:
    """Restart a service (risky: gated by approval in the tests)."""
    record("restart_service", service=service)
    if os.environ.get("SLOW_RESTART"):
        time.sleep(float(os.environ["SLOW_RESTART"]))
    return f"{service} restarted"


@server.tool()
def run_query(sql: str, padding: str = "") -> str:
    """Run SQL on the database (gated by approval in the tests); `padding` is ignored."""
    record("run_query", sql=sql, padding=len(padding))
    return "query ran"


@server.tool()
def fail(why: str) -> str:
    """Always fails."""
    record("fail", why=why)
    raise ValueError(why)


@server.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    record("slow", seconds=seconds)
    time.sleep(seconds)
    return "slept"


@server.tool()
def die() -> str:
    """Exits the server process in the middle of the call."""
    record("die")
    os._exit(3)


@server.tool()
def picture() -> Image:
    """A tiny picture."""
    return Image(data=PIXEL, format="png")


@server.tool()
def big(n: int) -> str:
    """n characters of text."""
    return "x" * n


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds a tool named `fresh` and tells the client its tools changed."""
    server.add_tool(lambda: "new", name="fresh", description="Appeared later.")
    await ctx.session.send_tool_list_changed()
    return "grown"


def bad_tools() -> None:
    server.add_tool(lambda: "x", name="has.dot", description="A name the API refuses.")
    server.add_tool(lambda: "x", name="weird", description="A schema that is not JSON Schema.")
    # the SDK checks only that it is an object schema; the type name is not JSON Schema's
    weird = {"type": "object", "properties": {"a": {"type": "nonsense"}}}
    server._tool_manager._tools["weird"].parameters = weird


def main() -> None:
    mode = sys.argv[1]
    if "--bad-tools" in sys.argv:
        bad_tools()
    if "--garbage" in sys.argv:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    if mode == "stdio":
        server.run()
    elif os.environ.get("REQUIRE_AUTH"):
        serve_with_auth(int(sys.argv[2]), os.environ["REQUIRE_AUTH"])
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


def serve_with_auth(port: int, expected: str) -> None:
    """Streamable HTTP behind a check of the Authorization header, as a real deployment
    sits behind one: every request's header is recorded, a wrong one gets a 401."""
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            got = headers.get(b"authorization", b"").decode()
            record("http_request", authorization=got)
            if got != expected:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="error")


if __name__ == "__main__":
    main()
