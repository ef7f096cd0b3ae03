"""One MCP server connection on the official SDK (`ClientSession` over the stdio or
streamable-HTTP transport), kept up for the life of the app.

`run()` connects, lists the tools, and stays until the connection ends (the stdio
process exited, the HTTP server stopped answering pings); then it reconnects with
backoff, forever. `call()` is used by other tasks: it never raises for the
server's sake, a timeout, a dead connection or a server error is a `CallFailed`
the registry turns into an error text for the model. The SDK's context managers
are entered and left in `run()`'s own task, as anyio requires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED

from agents.errors import AgentError
from agents.mcp.results import to_result
from agents.tools.toolbox import ToolResult
from bot.core.changes import CHANGES
from bot.outbox.sender import backoff
from config.tools import McpServerConfig

log = logging.getLogger(__name__)

State = Literal["starting", "connected", "restarting", "failed", "stopped"]
RETRY_BASE = 0.5
RETRY_MAX = 60.0
PING_SECONDS = 15.0
#: starting a server (a process importing its SDK, say) may take longer than one call
START_SECONDS = 30.0


class CallFailed(AgentError):
    """A tool call that produced no result (timeout, connection lost, protocol error)."""


class McpClient:
    def __init__(
        self,
        config: McpServerConfig,
        on_change: Callable[[McpClient], None],
        *,
        retry_base: float = RETRY_BASE,
        ping_seconds: float = PING_SECONDS,
    ) -> None:
        self.config = config
        self.name = config.name
        self.state: State = "starting"
        self.reason = ""
        self.tools: list[types.Tool] = []
        self.restarts = 0
        self._on_change = on_change
        self._retry_base = retry_base
        self._ping_seconds = ping_seconds
        self._session: ClientSession | None = None
        self._lost = asyncio.Event()
        self._tools_changed = asyncio.Event()
        self._wake = asyncio.Event()
        self.connected = asyncio.Event()
        self._http_refusal = ""  # the SDK's error hides the HTTP status; kept from here

    # -- lifecycle ---------------------------------------------------------------------
    async def run(self) -> None:
        attempt = 0
        while True:
            try:
                await self._connect_once()
                reason = "the connection ended"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reason = self._http_refusal + _reason(exc)
            was_up = self.state == "connected"
            attempt = 0 if was_up else attempt + 1
            self._down("restarting" if was_up else "failed", reason)
            await asyncio.sleep(backoff(attempt, self._retry_base, RETRY_MAX))
            self.restarts += 1

    def _down(self, state: State, reason: str) -> None:
        self._session = None
        self.connected.clear()
        self.state, self.reason = state, reason
        CHANGES.state(f"MCP server {self.name}", state, reason)  # the console: once per change
        self._on_change(self)

    async def _connect_once(self) -> None:
        self._lost.clear()
        self._wake.clear()
        self._http_refusal = ""
        async with (
            self._transport() as (read, write),
            ClientSession(read, write, message_handler=self._on_message) as session,
        ):
            with anyio.fail_after(max(self.config.timeout_seconds, START_SECONDS)):
                await session.initialize()
                listed = await session.list_tools()
            self.tools = list(listed.tools)
            self._session = session
            self.state, self.reason = "connected", ""
            CHANGES.state(f"MCP server {self.name}", "connected")
            self.connected.set()
            self._on_change(self)
            await self._stay(session)

    async def _stay(self, session: ClientSession) -> None:
        """Until the connection is lost: refresh tools on list_changed, ping when idle.
        (One event and anyio's timeout: asyncio.wait over several event waiters was not
        woken inside the SDK's task groups.)"""
        while True:
            with anyio.move_on_after(self._ping_seconds) as idle:
                await self._wake.wait()
            self._wake.clear()
            if self._lost.is_set():
                return
            if self._tools_changed.is_set():
                self._tools_changed.clear()
                with anyio.fail_after(self.config.timeout_seconds):
                    self.tools = list((await session.list_tools()).tools)
                self._on_change(self)
            elif idle.cancelled_caught:
                with anyio.fail_after(self.config.timeout_seconds):
                    await session.send_ping()

    def _signal(self, event: asyncio.Event) -> None:
        event.set()
        self._wake.set()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        cfg = self.config
        if cfg.command is not None:
            params = StdioServerParameters(command=cfg.command, args=cfg.args, env=cfg.env or None)
            with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 - opening devnull
                async with stdio_client(params, errlog=devnull) as (read, write):
                    yield _Watched(read, lambda: self._signal(self._lost)), write
            return
        assert cfg.url is not None
        client = create_mcp_http_client(
            headers=cfg.headers, timeout=httpx2.Timeout(cfg.timeout_seconds)
        )
        client.event_hooks["response"].append(self._note_refusal)
        async with client, streamable_http_client(cfg.url, http_client=client) as (read, write):
            yield _Watched(read, lambda: self._signal(self._lost)), write

    async def _note_refusal(self, response: httpx2.Response) -> None:
        # status and phrase only: never the request's headers (they carry secrets)
        if response.status_code >= 400:
            self._http_refusal = (
                f"HTTP {response.status_code} {response.reason_phrase} "
                "(check the entry's url and headers): "
            )

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._signal(self._tools_changed)
        elif isinstance(message, Exception):
            # a line that is not JSON-RPC (a server printing to stdout): skipped
            log.warning("MCP server %s sent something unreadable: %s", self.name, message)

    # -- calls -------------------------------------------------------------------------
    async def answer(self, offered: str, tool: str, args: dict[str, Any], limit: int) -> ToolResult:
        """The call as the model reads it (`offered` is its name there): the result cut
        to `limit` characters, or an error text saying why there is none."""
        try:
            result = await self.call(tool, args)
        except CallFailed as exc:
            return ToolResult(f"Error: {offered} did not complete: {exc}", is_error=True)
        return to_result(offered, result, limit)

    async def call(self, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        session = self._session
        if session is None:
            raise CallFailed(
                f"the MCP server {self.name} is not connected ({self.state}"
                + (f": {self.reason})" if self.reason else ")")
            )
        timeout = self.config.timeout_seconds
        try:
            with anyio.fail_after(timeout):
                return await session.call_tool(tool, args, read_timeout_seconds=timeout)
        except TimeoutError as exc:
            raise CallFailed(f"no answer from {self.name} within {timeout:g} s") from exc
        except Exception as exc:
            closed = isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
            if self._lost.is_set() or closed:
                raise CallFailed(f"the MCP server {self.name} went away mid-call") from exc
            raise CallFailed(f"{self.name} failed: {_reason(exc)}") from exc


class _Watched:
    """The transport's read stream, setting `lost` when it ends (EOF: the server is gone)."""

    def __init__(self, inner: Any, lost: Callable[[], None]) -> None:
        self._inner = inner
        self._lost = lost

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except (StopAsyncIteration, anyio.EndOfStream, anyio.ClosedResourceError):
            self._lost()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._lost()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _reason(exc: BaseException) -> str:
    """One line about why a connection failed (ExceptionGroups unwrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"cannot start: {text}"
    if isinstance(exc, TimeoutError):
        return "no answer to initialize in time"
    return f"{type(exc).__name__}: {text}"[:300]
