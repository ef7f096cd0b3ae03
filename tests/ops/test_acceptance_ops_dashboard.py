"""Issue 21 from outside, the dashboard's side: its forms without a token on a loopback
bind, stopping a worker stuck in a model call, and an operator denying a Slack approval
in Chromium through `switchboard run` (helpers in tests/kits/acceptance_kit.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import aiohttp
from playwright.async_api import BrowserContext, expect

from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text
from tests.fakes.slack_api import FakeSlack
from tests.kits.acceptance_kit import DASHBOARD_TOKEN, audit, switchboard_run
from tests.kits.app_kit import events, eventually, inbound
from tests.kits.ops_kit import served_app
from tests.kits.script import TeamScript
from tests.kits.slack_kit import MENTION
from tests.kits.tools_kit import caller, calls, stdio_entry, write_config


async def test_without_a_dashboard_token_the_loopback_forms_work_and_still_need_csrf(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """The embedded default (no token, loopback bind): an operator at the machine acts;
    a form posted without the page's CSRF token (another site's form) changes nothing."""
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/", headers={"Accept": "text/html"}) as page:
                found = re.search(r'name="csrf" value="([0-9a-f]+)"', await page.text())
            assert found is not None
            form = {"worker": "Alice"}
            async with session.post(url + "/actions/stop", data=form) as forged:
                assert forged.status == 403
            assert "alice" in app.team.workers
            form["csrf"] = found.group(1)
            async with session.post(url + "/actions/stop", data=form) as done:
                assert done.status == 200 and "Alice stopped" in await done.text()
        assert "alice" not in app.team.workers


async def test_stopping_a_worker_stuck_in_a_model_call_answers_at_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    script = TeamScript()

    def responder(call: Call) -> Any:
        if call.agent == "Alice":
            return Reply([text("late")], delay=60)  # the model does not come back
        return script(call)

    fake.responder = responder
    async with served_app(tmp_path, fake) as (app, _channel, url):
        app.human.accept(inbound("please research GPUs"))
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/", headers={"Accept": "text/html"}) as page:
                found = re.search(r'name="csrf" value="([0-9a-f]+)"', await page.text())
            assert found is not None
            form = {"worker": "Alice", "csrf": found.group(1)}
            started = time.monotonic()
            async with session.post(url + "/actions/stop", data=form) as done:
                assert done.status == 200 and "Alice stopped" in await done.text()
            assert time.monotonic() - started < 5
        assert "alice" not in app.team.workers


async def test_an_operator_denies_a_slack_approval_with_a_reason_in_chromium(
    tmp_path: Path,
    fake: FakeAnthropic,
    slack: FakeSlack,
    browser: BrowserContext,
) -> None:
    fake.responder = caller
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*"])
    write_config(tmp_path / "switchboard.toml", [entry])
    with switchboard_run(tmp_path, fake, slack) as url:
        await eventually(lambda: bool(events(tmp_path / "data", "mcp.connected")), timeout=30)
        ts = slack.post(f'{MENTION} call ops__restart_service {{"service": "api"}}', "UANN", "C1")
        await slack.until(lambda s: any("Approval needed" in p["text"] for p in s.posts), 60)
        page = await browser.new_page()
        await page.goto(url + "/")
        await page.fill("input[name=token]", DASHBOARD_TOKEN)
        await page.click("button[type=submit]")
        pending = page.locator("section", has_text="Pending approvals")
        await expect(pending).to_contain_text("ops__restart_service")
        await pending.locator("input[name=reason]").fill("not during the launch")
        await pending.locator("button", has_text="Deny").click()
        await expect(page.locator(".flash")).to_have_text("ops__restart_service denied.")
        await slack.until(lambda s: any("not during the launch" in p["text"] for p in s.posts), 30)
    assert calls(tmp_path / "calls.jsonl", "restart_service") == []
    assert all(p.get("thread_ts") == ts for p in slack.posts)
    assert any("not during the launch" in json.dumps(u) for u in slack.updates)  # the request
    decided = [a for a in audit(tmp_path) if a["type"] == "approval.decided"]
    assert [(a["decider"], a["how"], a["outcome"]) for a in decided] == [
        ("dashboard", "dashboard", "denied")
    ]
