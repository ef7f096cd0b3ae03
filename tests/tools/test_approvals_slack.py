"""Approvals on Slack, through slack-bolt and the fake Slack: a thread reply, the
Block Kit buttons (Socket Mode and HTTP mode), a non-approver's click, a double click."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.slack_kit import MENTION, post_with, posted, slack_app
from tests.kits.tools_kit import caller, calls, free_port, stdio_entry, tools_settings

RESTART = 'call ops__restart_service {"service": "api"}'


def settings_for(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, mode: str = "socket",
                 **env: str) -> Any:  # fmt: skip
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*", "run_*"])
    return tools_settings(
        tmp_path, fake, [entry], **slack.env(mode), SLACK_PACE_SECONDS="0.02", **env
    )


async def ask_for_restart(app: Any, slack: FakeSlack) -> tuple[str, dict[str, Any]]:
    await app.mcp.wait_connected(30)
    ts = slack.post(f"{MENTION} {RESTART}", channel="C1")
    await slack.until(posted("Approval needed"), 30)
    return ts, post_with(slack, "Approval needed")


async def test_a_tool_answered_and_a_restart_approved_by_thread_reply(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = caller
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        await app.mcp.wait_connected(30)
        ts = slack.post(f'{MENTION} call ops__deploy_status {{"service": "api"}}', channel="C1")
        await slack.until(posted("result: api: deployed v42, healthy"), 30)
        assert post_with(slack, "result: api: deployed")["thread_ts"] == ts
        slack.post(RESTART, channel="C1", thread_ts=ts)
        await slack.until(posted("Approval needed"), 30)
        request = post_with(slack, "Approval needed")
        assert request["thread_ts"] == ts and request["blocks"][1]["type"] == "actions"
        assert calls(tmp_path / "calls.jsonl", "restart_service") == []
        slack.post("approve", channel="C1", thread_ts=ts)  # Ann asked: not hers to decide
        await slack.until(posted("You asked for this call"), 30)
        assert calls(tmp_path / "calls.jsonl", "restart_service") == []
        slack.post("approve", user="UBOB", channel="C1", thread_ts=ts)
        await slack.until(posted("result: api restarted"), 30)
        assert "Approved by slack:UBOB" in post_with(slack, "Approved by")["text"]
        await slack.until(lambda s: len(s.updates) == 1)  # the request shows it too
        assert slack.updates[0]["ts"] == request["ts"]
        assert "Approved by slack:UBOB" in slack.updates[0]["text"]
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1


async def test_approve_button_updates_the_request_and_a_double_click_runs_nothing(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = caller
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        _, request = await ask_for_restart(app, slack)
        slack.click(request, "switchboard_approve", user="UBOB")
        slack.click(request, "switchboard_approve", user="UBOB")
        await slack.until(posted("result: api restarted"), 30)
        await slack.until(lambda s: len(s.ephemerals) == 1 and len(s.updates) == 1)
        assert "Approved by slack:UBOB at " in slack.updates[0]["text"]
        assert slack.updates[0]["blocks"][-1]["type"] == "context"  # the buttons are gone
        assert "already decided" in slack.ephemerals[0]["text"]
        # bolt acks a click once its handler returns, which may be after the note it posts
        await slack.until(lambda s: all(e.acked_at is not None for e in s.envelopes.values()))
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1


async def test_a_non_approver_click_changes_nothing_and_deny_says_who(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = caller
    settings = settings_for(tmp_path, fake, slack, SWITCHBOARD_APPROVERS="UBOSS")
    async with slack_app(settings) as (app, _):
        _, request = await ask_for_restart(app, slack)
        slack.click(request, "switchboard_approve", user="UANN")
        await slack.until(lambda s: len(s.ephemerals) == 1)
        assert "Only approvers" in slack.ephemerals[0]["text"]
        assert slack.ephemerals[0]["user"] == "UANN" and not slack.updates
        slack.click(request, "switchboard_deny", user="UBOSS")
        await slack.until(posted("result ERROR: Error: denied by slack:UBOSS"), 30)
        assert "Denied by slack:UBOSS" in slack.updates[0]["text"]
    assert calls(tmp_path / "calls.jsonl", "restart_service") == []


async def test_buttons_in_http_mode(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack) -> None:
    fake.responder = caller
    port = free_port()
    slack.http_endpoint = f"http://127.0.0.1:{port}/slack/events"
    settings = settings_for(
        tmp_path, fake, slack, "http",
        SWITCHBOARD_HTTP_HOST="127.0.0.1", SWITCHBOARD_HTTP_PORT=str(port),
    )  # fmt: skip
    async with slack_app(settings) as (app, _):
        _, request = await ask_for_restart(app, slack)
        slack.click(request, "switchboard_approve", user="UBOB")
        await slack.until(posted("result: api restarted"), 30)
        assert slack.http_statuses[-1] == 200 and len(slack.updates) == 1


async def test_the_requester_cannot_approve_their_own_call_and_the_record_names_the_approver(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """No approvers listed: anyone allowed may decide, except whoever asked. The record
    keeps the decider's resolved person and platform id, not a display name."""
    fake.responder = caller
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        _, request = await ask_for_restart(app, slack)
        assert "asked in slack:UANN's conversation" in request["text"]
        approval_id = request["blocks"][-1]["elements"][0]["value"]
        slack.click(request, "switchboard_approve", user="UANN")
        await slack.until(lambda s: len(s.ephemerals) == 1)
        assert "You asked for this call" in slack.ephemerals[0]["text"]
        assert not slack.updates and calls(tmp_path / "calls.jsonl", "restart_service") == []
        slack.click(request, "switchboard_approve", user="UBOB")
        await slack.until(posted("result: api restarted"), 30)
        row = app.store.approvals.get(approval_id)
        assert row is not None and (row.decider_id, row.how) == ("slack:UBOB", "button")
        assert (row.requester, row.requester_id) == ("UANN", "slack:UANN")
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1


async def test_a_button_replayed_from_another_conversation_is_refused(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = caller
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        _, request = await ask_for_restart(app, slack)
        replayed = {**request, "channel": "C2"}  # the same payload, sent from channel C2
        slack.click(replayed, "switchboard_approve", user="UBOB")
        await slack.until(lambda s: len(s.ephemerals) == 1)
        assert "another conversation" in slack.ephemerals[0]["text"]
        assert app.store.approvals.pending() and not slack.updates
        slack.click(request, "switchboard_deny", user="UBOB")
        await slack.until(posted("result ERROR: Error: denied by slack:UBOB"), 30)
    assert calls(tmp_path / "calls.jsonl", "restart_service") == []


async def test_markup_in_arguments_shows_as_text_on_slack(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    """A markdown link, a mention and a code fence in an argument reach Slack as text
    inside the request's code block: no `<url|label>` link, no `<@U..>` mention."""
    fake.responder = caller
    evil = "[click me](https://evil.test/x) <@UBOSS> <!channel> ``` *bold*"
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        await app.mcp.wait_connected(30)
        arg = json.dumps({"service": evil})
        slack.post(f"{MENTION} call ops__restart_service {arg}", channel="C1")
        await slack.until(posted("Approval needed"), 30)
        request = post_with(slack, "Approval needed")
        section = request["blocks"][0]["text"]["text"]
        for text in (request["text"], section):
            assert "<https://evil.test" not in text and "<@UBOSS>" not in text
            assert "<!channel>" not in text and text.count("```") == 2
            assert "[click me](https://evil.test/x)" in text


async def test_a_long_argument_is_attached_in_full_and_the_buttons_stay(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = caller
    args = {"padding": "p" * 4000, "sql": "DROP TABLE payroll"}
    async with slack_app(settings_for(tmp_path, fake, slack)) as (app, _):
        await app.mcp.wait_connected(30)
        slack.post(f"{MENTION} call ops__run_query {json.dumps(args)}", channel="C1")
        await slack.until(posted("Approval needed"), 30)
        request = post_with(slack, "Approval needed")
        assert request["blocks"][-1]["type"] == "actions"
        assert '"sql": "DROP TABLE payroll"' in request["blocks"][0]["text"]["text"]
        await slack.until(lambda s: bool(s.uploads), 30)
        ((sent,),) = [u["files"] for u in slack.uploads]
        assert sent["name"] == "ops__run_query-arguments.json"
        assert json.loads(sent["data"]) == args
        assert slack.uploads[0]["thread_ts"] == request["thread_ts"]
