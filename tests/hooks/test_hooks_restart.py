"""A hook delivery survives a kill -9 between its 2xx and the agent's post: the bot,
started again on the same data dir, answers it once; the delivery sent again after
the restart is still a duplicate."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot.ops.hooks_samples import workflow_run
from tests.fakes.anthropic_api import Call, FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.hooks_kit import analyst, entry, send, toml
from tests.kits.proc import Run
from tests.kits.slack_kit import free_port, posted


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def _up(port: int, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not _listening(port):
        assert time.monotonic() < deadline, "the bot never listened"
        await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_a_kill_between_the_2xx_and_the_post_is_answered_once_after_restart(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    released = threading.Event()

    async def slow_then_quick(call: Call) -> list[dict[str, Any]]:
        # the model has not answered when the bot is killed
        await asyncio.to_thread(released.wait, 60)
        return analyst(call)

    fake.responder = slow_then_quick
    port = free_port()
    config = tmp_path / "switchboard.toml"
    config.write_text(toml([entry("ci", "github")]))
    env = {**fake.env(), **slack.env("socket"), "SWITCHBOARD_CONFIG": str(config),
           "SWITCHBOARD_HTTP_PORT": str(port), "SWITCHBOARD_STREAMING": "off"}  # fmt: skip
    run = Run(env, tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        run.start()
        await _up(port)
        status, _ = await send(url, "ci", "github", workflow_run(), delivery="d-kill")
        assert status == 202
        await asyncio.to_thread(fake.wait_for, lambda calls: len(calls) >= 1, 20)
        run.kill()  # acknowledged, the turn under way, nothing posted
        assert slack.posts == []
        released.set()
        run.start()
        await _up(port)
        await slack.until(posted("ANALYSIS"), timeout=30)
        again, body = await send(url, "ci", "github", workflow_run(), delivery="d-kill")
        assert again == 200 and body["duplicate"] is True
        await asyncio.sleep(1.5)  # time for a second post, were there one
    finally:
        run.stop()
    assert [p["text"].count("ANALYSIS") for p in slack.posts] == [1]
