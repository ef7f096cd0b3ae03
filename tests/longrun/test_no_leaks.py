"""Nothing leaks per conversation or per channel restart: after sixty conversations
and after Slack drops the connection ten times, the bot holds the asyncio tasks and open
files it held before (give or take a few in flight)."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.slack_kit import slack_app, slack_settings

SLACK_OF = 3  # tasks and fds a reconnect may still hold while the new socket settles


def tasks() -> int:
    return len(asyncio.all_tasks())


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def settle(slack: FakeSlack, posts: int) -> None:
    await asyncio.to_thread(slack.wait_for, lambda s: len(s.posts) >= posts, 60)
    await asyncio.sleep(1.0)
    gc.collect()


async def test_conversations_and_reconnects_leave_no_tasks_or_files(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = lambda call: [text("ok")]
    async with slack_app(slack_settings(tmp_path / "data", fake, slack)) as (app, _):
        for i in range(60):  # warm: the HTTP pools of Slack and the model fill up
            slack.post(f"warm {i}", channel=f"D{i + 1}", channel_type="im")
        await settle(slack, 60)
        before = (tasks(), fds())
        for i in range(60):  # sixty more conversations, one message each
            slack.post(f"question {i}", channel=f"D{i + 101}", channel_type="im")
        await settle(slack, 120)
        after_talk = (tasks(), fds())
        for _ in range(10):
            opened = slack.connections
            slack.drop()
            await asyncio.to_thread(
                slack.wait_for, lambda s, o=opened: s.connections > o and s.open_sockets > 0, 30
            )
            await asyncio.sleep(0.3)
        await asyncio.sleep(2.0)
        gc.collect()
        after_drops = (tasks(), fds())
        print(f"tasks/fds: {before}, after 60 conversations {after_talk}, 10 drops {after_drops}")
        assert after_talk[0] <= before[0] + SLACK_OF and after_talk[1] <= before[1] + SLACK_OF
        assert after_drops[0] <= before[0] + SLACK_OF and after_drops[1] <= before[1] + SLACK_OF
        assert not app.coordinator.sessions  # every conversation's session left when done
