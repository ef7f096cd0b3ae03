"""Another conversation's triggers and workers are neither listed nor stopped, and a worker
named like the operators' gets their server only with approval (security review #12)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_api import Call, FakeAnthropic, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.security_kit import in_channel, managing, schedule
from tests.kits.slack_kit import MENTION, post_with, posted, slack_app, slack_settings
from tests.kits.tools_kit import caller, calls, content_of, stdio_entry, tools_settings


async def test_k1_another_conversations_triggers_and_workers_are_neither_listed_nor_stopped(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """Ann keeps a reminder and a worker in her DM. From a public thread Mallory's
    coordinator lists neither, and can cancel neither; Ann still can."""
    fake.responder = managing
    remind = schedule(type="delayed", config={"delay_seconds": 3600},
                      action="Remind Ann: wire 2.1M to Initech")  # fmt: skip
    spawn = 'call spawn_worker {"name": "Bob", "task": "Negotiate Initech, max 40M"}'

    async def ann(line: str, words: str) -> str:
        slack.post(line, user="UANN", channel="DANN", channel_type="im")
        await slack.until(lambda s: any(words in t for t in in_channel(s, "DANN")), 20)
        return next(t for t in reversed(in_channel(slack, "DANN")) if words in t)

    async def mallory(line: str) -> str:
        before = len(in_channel(slack, "CPUBLIC"))
        slack.post(f"{MENTION} {line}", user="UMAL", channel="CPUBLIC")
        await slack.until(lambda s: len(in_channel(s, "CPUBLIC")) > before, 20)
        return in_channel(slack, "CPUBLIC")[-1]

    async with slack_app(slack_settings(tmp_path, fake, slack)) as (app, _):
        trigger_id = re.findall(r"Scheduled trigger (t\w+)", await ann(remind, "Scheduled"))[0]
        await ann(spawn, "highest price")  # Bob asks Ann, and waits
        listed = await mallory("call list_triggers {}")
        assert "wire 2.1M" not in listed and "1 more belong to other conversations" in listed
        cancel = await mallory(f'call cancel_trigger {{"trigger_id": "{trigger_id}"}}')
        assert "belongs to another conversation" in cancel
        workers = await mallory("call list_workers {}")
        assert "Initech" not in workers and "1 more work for other conversations" in workers
        stop = await mallory('call stop_worker {"name": "Bob"}')
        assert "Bob works for another conversation" in stop
        wake = schedule(type="delayed", config={"delay_seconds": 1, "agent": "Bob"},
                        action="Tell me your highest price")  # fmt: skip
        assert "Bob works for another conversation" in await mallory(wake)
        assert [r.id for r in app.triggers.table.active()] == [trigger_id]
        assert "bob" in app.team.workers
        # Ann's DM holds Bob's question: she speaks to the coordinator by name
        assert "wire 2.1M" in await ann("@coordinator call list_triggers {}", "wire 2.1M")
        cancel = f'@coordinator call cancel_trigger {{"trigger_id": "{trigger_id}"}}'
        assert "cancelled" in await ann(cancel, "cancelled")
    refusals = [e["data"] for e in events(tmp_path, "access.refused")]
    assert [(d["action"], d["person_id"]) for d in refusals] == [
        ("cancel_trigger", "slack:UMAL"),
        ("stop_worker", "slack:UMAL"),
        ("schedule_trigger", "slack:UMAL"),
    ]


def deployer(call: Call) -> list[dict[str, Any]]:
    """The coordinator calls what it is told; the worker Deployer checks the deploy."""
    if call.agent == "coordinator":
        return caller(call)
    results = call.tool_results()
    if results:
        return [tool("publish", result=content_of(results[-1]))]
    return [tool("ops__deploy_status", service="api")]


async def test_k2_naming_a_worker_like_the_operators_gives_its_server_only_with_approval(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """A server kept for the worker `deployer` (no approval globs): Mallory has a worker
    of that name spawned in her public thread; its calls wait for an approver, and run
    once one says yes."""
    fake.responder = deployer
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", agents=["deployer"])
    settings = tools_settings(tmp_path, fake, [entry], **slack.env("socket"),
                              SLACK_PACE_SECONDS="0.02")  # fmt: skip
    spawn = 'call spawn_worker {"name": "Deployer", "task": "check the deploy"}'
    async with slack_app(settings) as (app, _):
        await app.mcp.wait_connected(30)
        slack.post(f"{MENTION} {spawn}", user="UMAL", channel="CPUBLIC")
        await slack.until(posted("Approval needed"), 30)
        assert calls(tmp_path / "calls.jsonl", "deploy_status") == []
        request = post_with(slack, "Approval needed")
        assert request["channel"] == "CPUBLIC" and "ops__deploy_status" in request["text"]
        slack.click(request, "switchboard_approve", user="UBOB")
        await slack.until(lambda s: calls(tmp_path / "calls.jsonl", "deploy_status") != [], 30)
    assert len(calls(tmp_path / "calls.jsonl", "deploy_status")) == 1
