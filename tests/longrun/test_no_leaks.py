"""Nothing leaks per conversation, per channel restart or per MCP server restart: after
sixty conversations, after Slack drops the connection ten times, and after an MCP server
dies and is restarted ten times, the bot holds the asyncio tasks, open files and child
processes it held before (give or take a few in flight)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from pathlib import Path

from agents.mcp.client import CallFailed, McpClient
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import Recorder, eventually, running_app
from tests.kits.slack_kit import slack_app, slack_settings
from tests.kits.tools_kit import stdio_entry, tools_settings

SLACK_OF = 3  # tasks and fds a reconnect may still hold while the new socket settles
#: keep-alive connections to Slack's Web API the bot's pool may add when a round's posts
#: overlap more than the warm round's did (16 seen on a loaded machine); a leak per
#: conversation adds sixty
POOLED = 30
RESTARTS = 10  # MCP server restarts


def tasks() -> int:
    return len(asyncio.all_tasks())


def fds(*servers: int) -> int:
    """Open fds of this process, less the accepted sockets of the fakes it also runs
    (listening on `servers`): those are the fakes', not the bot's."""
    theirs = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
            if local in servers and remote:  # a fake's end of a connection
                theirs.add(f"socket:[{fields[9]}]")
    mine = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            mine += os.readlink(f"/proc/self/fd/{fd}") not in theirs
    return mine


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
        before = (tasks(), fds(slack.port, fake.port))
        for i in range(60):  # sixty more conversations, one message each
            slack.post(f"question {i}", channel=f"D{i + 101}", channel_type="im")
        await settle(slack, 120)
        after_talk = (tasks(), fds(slack.port, fake.port))
        for _ in range(10):
            opened = slack.connections
            slack.drop()
            await asyncio.to_thread(
                slack.wait_for, lambda s, o=opened: s.connections > o and s.open_sockets > 0, 30
            )
            await asyncio.sleep(0.3)
        await asyncio.sleep(2.0)
        gc.collect()
        after_drops = (tasks(), fds(slack.port, fake.port))
        print(f"tasks/fds: {before}, after 60 conversations {after_talk}, 10 drops {after_drops}")
        assert after_talk[0] <= before[0] + SLACK_OF
        assert after_talk[1] <= before[1] + SLACK_OF + POOLED
        assert after_drops[0] <= before[0] + SLACK_OF
        assert after_drops[1] <= after_talk[1] + SLACK_OF
        assert not app.coordinator.sessions  # every conversation's session left when done


def children() -> tuple[int, int]:
    """(child processes, of which zombies) of this process."""
    mine, zombies = 0, 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == os.getpid():
            mine += 1
            zombies += state == "Z"
    return mine, zombies


async def restart(client: McpClient) -> None:
    """The server dies mid-call; the client starts a new one."""
    restarts = client.restarts
    with contextlib.suppress(CallFailed):
        await client.call("die", {})
    await eventually(lambda: client.state == "connected" and client.restarts > restarts, 60)


async def test_mcp_server_restarts_leave_no_tasks_files_or_processes(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = tools_settings(tmp_path, fake, [stdio_entry("ops", tmp_path / "calls.jsonl")])
    async with running_app(settings, [Recorder()]) as app:
        await app.mcp.wait_connected(30)
        client = app.mcp.clients["ops"]
        client._retry_base = 0.05  # the next server starts at once, not 0.25-0.5 s later
        await restart(client)  # warm: the first restart's lazy imports and pools
        await asyncio.sleep(0.5)
        gc.collect()
        before = (tasks(), fds(), children())
        for _ in range(RESTARTS):
            await restart(client)
        assert (await client.call("echo", {"text": "back"})).content[0].text == "back"  # type: ignore[union-attr]

        def settled() -> bool:  # a loaded machine reaps the last server a moment later
            gc.collect()
            now = (tasks(), fds(), children())
            return (
                now[0] <= before[0] + SLACK_OF
                and now[1] <= before[1] + SLACK_OF
                and now[2] == before[2]
            )

        with contextlib.suppress(AssertionError, TimeoutError):
            await eventually(settled, 10)
        after = (tasks(), fds(), children())
        print(f"tasks/fds/children: {before}, after {RESTARTS} MCP restarts {after}")
        assert after[0] <= before[0] + SLACK_OF and after[1] <= before[1] + SLACK_OF
        # the same children (the live server; a worker of xdist also holds its session servers)
        assert after[2] == before[2] and after[2][0] >= 1 and after[2][1] == 0  # no zombie
