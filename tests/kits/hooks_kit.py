"""The hooks kit: a config file with `[[hooks]]`, the app with the real Slack channel
serving HTTP on a free port, signed requests as each provider sends them, and a
scripted model that analyses what a hook hands it.

    async with hooks_app(tmp_path, fake, slack, [ALERTS]) as (app, url): ...
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from bot.app import App
from bot.ops.hooks_samples import encoded, signed
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.slack_kit import free_port, slack_app, slack_settings

SECRET = "s3cret-for-hooks-tests-0123456789"
OPS = "COPS"


def entry(name: str, kind: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "secret": SECRET,
        "deliver_to": f"slack:{OPS}",
        "action": f"Look at this {kind} event and tell #ops what you found.",
        **more,
    }


def toml(entries: list[dict[str, Any]], extra: str = "") -> str:
    out = [extra]
    for e in entries:
        out.append("[[hooks]]")
        for key, value in e.items():
            if isinstance(value, dict):
                inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
                out.append(f"{key} = {{ {inner} }}")
            else:
                out.append(f"{key} = {json.dumps(value)}")
    return "\n".join(out) + "\n"


def hooks_settings(
    tmp_path: Path,
    fake: FakeAnthropic,
    slack: FakeSlack,
    entries: list[dict[str, Any]],
    extra: str = "",
    **env: str,
) -> Settings:
    config = tmp_path / "switchboard.toml"
    config.write_text(toml(entries, extra))
    port = env.pop("SWITCHBOARD_HTTP_PORT", str(free_port()))
    return slack_settings(
        tmp_path / "data", fake, slack, SWITCHBOARD_CONFIG=str(config),
        SWITCHBOARD_HTTP_PORT=port, **env,
    )  # fmt: skip


@contextlib.asynccontextmanager
async def hooks_app(settings: Settings) -> AsyncIterator[tuple[App, str]]:
    async with slack_app(settings) as (app, _channel):
        yield app, f"http://127.0.0.1:{settings.listen_port}"


async def send(
    url: str, name: str, kind: str, payload: Any, delivery: str | None = None,
    headers: dict[str, str] | None = None, secret: str = SECRET,
) -> tuple[int, dict[str, Any]]:  # fmt: skip
    """POST a payload to /hooks/<name>, signed as `kind` signs (unless `headers`)."""
    body = payload if isinstance(payload, bytes) else encoded(payload)
    sent = headers if headers is not None else signed(kind, secret, body, delivery)
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/hooks/{name}", data=body, headers=sent) as response,
    ):
        return response.status, await response.json()


_STATUS = re.compile(r'"(?:status|conclusion|event_type)": "([a-z._]+)"')


def analyst(call: Call) -> list[dict[str, Any]]:
    """A coordinator (or worker) that says what a hook told it: the statuses it read."""
    last = call.last_text
    if "published its result" in last:
        return [text("Summary: " + last.split("published its result]: ", 1)[1])]
    if call.tool_results():
        return [text("")]
    if call.agent != "coordinator":  # a worker: its task (and payload) is in its prompt
        found = ",".join(_STATUS.findall(call.system.replace("\\", ""))[:3])
        return [tool("publish", result=f"worker read {found}")]
    if "[Hook " in last:
        return [text(f"ANALYSIS {','.join(_STATUS.findall(last)[:3])}")]
    return [text(f"heard: {last[:80]}")]


def paging(call: Call) -> list[dict[str, Any]]:
    """`analyst`, and a trigger's turn ("Page the on-call") that says which event woke it."""
    if "Page the on-call" in call.last_text:
        return [text("PAGED " + call.last_text.split("(Triggered by event ", 1)[1][:40])]
    return analyst(call)
