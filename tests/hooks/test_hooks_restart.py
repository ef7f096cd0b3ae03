"""A hook delivery survives a kill -9 between its 2xx and the agent's post: the bot,
started again on the same data dir, answers it once, and the `on_event` trigger its
`hook.<name>` event fired acts once; the delivery sent again after the restart is still
a duplicate. A crash between the event (the trigger's firing) and the hand-over
announces the delivery again after the restart: the trigger does not fire twice."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot.core.trigger_spec import TriggerSpec
from bot.ops.hooks_samples import workflow_run
from bot.store.core import Store
from bot.store.trigger_rows import TriggerRow
from tests.fakes.anthropic_api import Call, FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.hooks_kit import entry, hooks_app, hooks_settings, paging, send, toml
from tests.kits.proc import Run
from tests.kits.slack_kit import free_port, posted

THREAD = "slack:COPS/1700.000001"
PAGE = TriggerSpec("on_event", {"event_pattern": "hook.ci"}, "Page the on-call.")


def _said(slack: FakeSlack) -> list[str]:
    """What each post was: an analysis of the hook, or the trigger's page."""
    return sorted(w for p in slack.posts for w in ("ANALYSIS", "PAGED") if w in p["text"])


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
        return paging(call)

    fake.responder = slow_then_quick
    port = free_port()
    config = tmp_path / "switchboard.toml"
    config.write_text(toml([entry("ci", "github")]))
    store = Store(tmp_path / "data" / "switchboard.db")  # a trigger made in #ops
    store.triggers.save(TriggerRow("tpage", PAGE, conversation=THREAD, origin_target=THREAD))
    store.close()
    env = {**fake.env(), **slack.env("socket"), "SWITCHBOARD_CONFIG": str(config),
           "SWITCHBOARD_HTTP_PORT": str(port), "SWITCHBOARD_STREAMING": "off"}  # fmt: skip
    run = Run(env, tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        run.start()
        await _up(port)
        status, _ = await send(url, "ci", "github", workflow_run(), delivery="d-kill")
        assert status == 202
        await asyncio.to_thread(fake.wait_for, lambda calls: len(calls) >= 2, 20)
        run.kill()  # acknowledged, the turn and the trigger's under way, nothing posted
        assert slack.posts == []
        released.set()
        run.start()
        await _up(port)
        await slack.until(posted("ANALYSIS"), timeout=30)
        await slack.until(posted("PAGED hook.ci"), timeout=30)
        again, body = await send(url, "ci", "github", workflow_run(), delivery="d-kill")
        assert again == 200 and body["duplicate"] is True
        await asyncio.sleep(1.5)  # time for a second post, were there one
    finally:
        run.stop()
    assert _said(slack) == ["ANALYSIS", "PAGED"]


async def test_a_crash_between_the_hook_event_and_the_hand_over_fires_its_trigger_once(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paging
    settings = hooks_settings(tmp_path, fake, slack, [entry("ci", "github")])
    async with hooks_app(settings) as (app, url):
        trigger = app.triggers.create(PAGE, "coordinator", THREAD, THREAD)
        assert app.ops.hooks is not None
        desk = app.ops.hooks.desk
        handle, lost = desk._handle, []
        desk._handle = lost.extend  # type: ignore[method-assign]  # dies before handing over
        assert (await send(url, "ci", "github", workflow_run(), delivery="d-1"))[0] == 202
        await slack.until(posted("PAGED hook.ci"))
        await eventually(lambda: len(lost) == 1)
        # started again: no memory of the run (its cooldowns, what the desk held); the
        # journal still holds the delivery open, so it is announced and handed over again
        desk._handle = handle  # type: ignore[method-assign]
        desk._seen.clear()
        app.triggers.event_watch._last_fired.clear()
        assert desk.take() == 1
        await slack.until(posted("ANALYSIS"))
        await asyncio.sleep(1.0)  # time for a second page, were there one
        assert app.store.triggers.outcomes(trigger.id) == ["fired"]
    assert _said(slack) == ["ANALYSIS", "PAGED"]
