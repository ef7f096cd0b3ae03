"""Helpers for the tool tests: settings with `[[mcp_servers]]` entries pointing at the
test MCP server (tests/servers/mcp_ops.py, a real SDK server in a subprocess), an HTTP
instance of it on 127.0.0.1, the calls it recorded, and `caller`: a model that calls
the tool a person's line names (`call <tool> {json}`, made by `call`)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from config.settings import Settings, load_settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool, unwrap

SERVER = str(Path(__file__).parents[1] / "servers" / "mcp_ops.py")
CALL = re.compile(r"call (\S+) (\{.*\})")


def stdio_entry(name: str, calls: Path, *flags: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [SERVER, "stdio", *flags],
        "env": {"CALLS_FILE": str(calls), **extra.pop("env", {})},
        **extra,
    }


def http_entry(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "url": url, **extra}


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    return json.dumps(value)  # strings, numbers, booleans and lists read the same in TOML


def write_config(path: Path, servers: list[dict[str, Any]]) -> Path:
    lines = []
    for entry in servers:
        lines.append("[[mcp_servers]]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def tools_settings(
    tmp_path: Path, fake: FakeAnthropic, servers: list[dict[str, Any]], **env: str
) -> Settings:
    environ = {
        **fake.env(),
        "SWITCHBOARD_STREAMING": "off",  # answers read as whole posts (as tests/kits/app_kit.py)
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LLM_RETRY_BASE_SECONDS": "0.05",
        "SWITCHBOARD_LLM_RETRY_MAX_SECONDS": "0.2",
        "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.05",
        **env,
    }
    return load_settings(write_config(tmp_path / "switchboard.toml", servers), environ)


def calls(path: Path, tool: str | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if tool is None or r["tool"] == tool]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """tests/servers/mcp_ops.py serving streamable HTTP on 127.0.0.1 (start, stop, start)."""

    def __init__(self, calls: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.calls = calls
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "http", str(self.port)],
            env={"CALLS_FILE": str(self.calls), "PATH": "/usr/bin:/bin", **self.env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("the MCP HTTP server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None


@contextlib.contextmanager
def http_server(calls: Path, **env: str) -> Iterator[HttpServer]:
    server = HttpServer(calls, env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def content_of(block: dict[str, Any]) -> str:
    """A tool result's content, without the untrusted block's delimiter lines."""
    content = block.get("content")
    if isinstance(content, str):
        return unwrap(content)
    return json.dumps([dict(b, text=unwrap(b["text"])) if "text" in b else b for b in content])


def caller(call: Call) -> list[dict[str, Any]]:
    """The model: `call <tool> {json}` calls it; a tool result is said back."""
    results = call.tool_results()
    if results:
        r = results[-1]
        flag = " ERROR" if r.get("is_error") else ""
        return [text(f"result{flag}: {content_of(r)}")]
    found = CALL.search(call.last_text)
    if found:
        return [tool(found.group(1), **json.loads(found.group(2)))]
    return [text("ok")]


def call(name: str, **args: Any) -> str:
    """The line that makes `caller` call `name` with `args`."""
    return f"call {name} {json.dumps(args)}"
