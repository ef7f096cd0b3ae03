"""Nothing leaks per restart of a streamable-HTTP MCP server (as tests/longrun/
test_no_leaks.py shows for a stdio one): the server is killed and started again on its
port six times while the bot runs; the bot reconnects each time, and holds the asyncio
tasks, open files and sockets it held before (give or take a few in flight)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from pathlib import Path

from agents.mcp.client import McpClient
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, eventually, running_app
from tests.kits.tools_kit import HttpServer, http_entry, http_server, tools_settings

RESTARTS = 6
SLACK_OF = 3  # tasks and fds a reconnect may still hold while the new session settles


def counts() -> tuple[int, int, int]:
    """(asyncio tasks, open fds, of which sockets) of this process."""
    sockets = 0
    fds = os.listdir("/proc/self/fd")
    for fd in fds:
        with contextlib.suppress(OSError):
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return len(asyncio.all_tasks()), len(fds), sockets


async def bounce(server: HttpServer, client: McpClient) -> None:
    """The server dies and comes back on its port; the client reconnects."""
    restarts = client.restarts
    await asyncio.to_thread(server.stop)
    await eventually(lambda: client.state != "connected", 15)
    await asyncio.to_thread(server.start)
    await eventually(lambda: client.state == "connected" and client.restarts > restarts, 30)


async def test_http_mcp_server_restarts_leave_no_tasks_files_or_sockets(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    with http_server(tmp_path / "calls.jsonl") as server:
        entry = http_entry("web", server.url, timeout_seconds=3)
        settings = tools_settings(tmp_path, fake, [entry])
        async with running_app(settings, [Recorder()]) as app:
            client = app.mcp.clients["web"]
            client._ping_seconds = 0.3  # a dead server is noticed at the next ping
            client._retry_base = 0.05  # and a server back is found within ~0.1-0.8 s
            await app.mcp.wait_connected(30)
            await bounce(server, client)  # warm: the first reconnect's imports and pools
            await asyncio.sleep(0.5)
            gc.collect()
            before = counts()
            for _ in range(RESTARTS):
                await bounce(server, client)
            reply = await client.call("echo", {"text": "back"})
            assert reply.content[0].text == "back"  # type: ignore[union-attr]

            def settled() -> bool:
                gc.collect()
                now = counts()
                return all(n <= b + SLACK_OF for n, b in zip(now, before, strict=True))

            with contextlib.suppress(AssertionError, TimeoutError):
                await eventually(settled, 10)
            after = counts()
            print(f"tasks/fds/sockets: {before}, after {RESTARTS} HTTP MCP restarts {after}")
            assert client.restarts >= RESTARTS + 1
            assert all(n <= b + SLACK_OF for n, b in zip(after, before, strict=True)), (
                before,
                after,
            )
