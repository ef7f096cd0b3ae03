"""Issue 21 from outside, as the acceptance tests drive it: `switchboard run` as a
subprocess against the fake Slack, the HTTP API called with the contract's names
(`POST /api/messages`, `GET /api/messages/<id>`, `SWITCHBOARD_API_TOKEN` a bare token),
and the dashboard's forms in Chromium (log in, answer a worker's question, a forged
CSRF token refused), each action then read back in `switchboard audit`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from playwright.async_api import BrowserContext, expect

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.ops_kit import free_port
from tests.proc import Switchboard
from tests.script import TeamScript
from tests.slack_kit import MENTION, heard, slack_fake_fixture  # noqa: F401
from tests.test_dashboard_browser import browser  # noqa: F401

API_TOKEN = "deploy-notices-0123456789"
DASHBOARD_TOKEN = "an-operator-token-0123456789"


@contextlib.contextmanager
def switchboard_run(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack) -> Iterator[str]:
    """`switchboard run` with Slack (Socket Mode), the API and the dashboard; its URL."""
    port = free_port()
    env = {
        **fake.env(), **slack.env("socket"), "SLACK_PACE_SECONDS": "0.02",
        "SWITCHBOARD_HTTP_PORT": str(port), "SWITCHBOARD_API_TOKEN": API_TOKEN,
        "SWITCHBOARD_DASHBOARD_TOKEN": DASHBOARD_TOKEN,
    }  # fmt: skip
    run = Switchboard(["--data-dir", str(tmp_path / "data"), "run"], env, tmp_path)
    try:
        slack.wait_for(lambda s: s.open_sockets == 1, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        run.proc.send_signal(signal.SIGTERM)
        code, lines = run.finish(timeout=30)
    assert code == 0 and not any("Traceback" in line for line in lines), lines


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    """`switchboard audit --json`, as an operator reads it."""
    cmd = Switchboard(["--data-dir", str(tmp_path / "data"), "audit", "--json"], {}, tmp_path)
    code, lines = cmd.finish()
    assert code == 0, lines
    return [json.loads(line) for line in lines if line.startswith("{")]


async def api(
    method: str, url: str, body: Any = None, token: str | None = API_TOKEN
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def replies_when(url: str, n: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 15
    while True:
        status, body = await api("GET", url)
        assert status == 200, body
        if len(body["replies"]) >= n or time.monotonic() > deadline:
            return list(body["replies"])
        await asyncio.sleep(0.05)


async def test_a_program_posts_a_deploy_notice_into_a_slack_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = heard
    with switchboard_run(tmp_path, fake, slack) as url:
        ts = slack.post(f"{MENTION} we deploy today", channel="C1")
        await slack.until(lambda s: len(s.posts) == 1, timeout=20)
        status, body = await api(
            "POST", f"{url}/api/messages",
            {"text": "deploy 41 is live", "conversation": f"slack:C1/{ts}"},
        )  # fmt: skip
        assert status == 202 and body["id"], body
        await slack.until(lambda s: len(s.posts) == 2, timeout=20)
        got = await replies_when(f"{url}/api/messages/{body['id']}", 1)

        status, own = await api("POST", f"{url}/api/messages", {"text": "what is deployed?"})
        assert status == 202
        answered = await replies_when(f"{url}/api/messages/{own['id']}", 1)

        refusals = [
            await api("POST", f"{url}/api/messages", {"text": "x"}, token=None),
            await api("POST", f"{url}/api/messages", {"text": "x"}, token="wrong-token-123"),
            await api("POST", f"{url}/api/messages", {"text": ""}),
            await api("POST", f"{url}/api/messages", {"text": "x" * 1_000_000}),
            await api("GET", f"{url}/api/messages/no-such-id"),
        ]
    assert slack.posts[1]["thread_ts"] == ts
    assert len(got) == 1 and got[0]["text"].endswith("deploy 41 is live")
    assert got[0]["text"] in slack.posts[1]["text"]  # the reply read back is the one posted
    assert len(answered) == 1 and "what is deployed?" in answered[0]["text"]
    assert len(slack.posts) == 2  # the API's own conversation is answered to the caller only
    assert [s for s, _ in refusals] == [401, 401, 400, 413, 404]
    assert all(b["error"] for _, b in refusals)
    assert len(fake.calls) == 3  # nothing refused reached the model
    lines = [a for a in audit(tmp_path) if a["type"] == "operator.action"]
    assert len(lines) == 2 and {a["decider"] for a in lines} == {"api:api"}, lines


async def test_an_operator_answers_a_question_in_chromium_and_a_forged_form_changes_nothing(
    tmp_path: Path,
    fake: FakeAnthropic,
    slack: FakeSlack,
    browser: BrowserContext,  # noqa: F811
) -> None:
    script = TeamScript()
    fake.responder = script
    with switchboard_run(tmp_path, fake, slack) as url:
        ts = slack.post(f"{MENTION} please research GPUs", channel="C1")
        await slack.until(lambda s: any(script.question in p["text"] for p in s.posts), 30)
        page = await browser.new_page()
        await page.goto(url + "/")
        await page.fill("input[name=token]", DASHBOARD_TOKEN)
        await page.click("button[type=submit]")
        questions = page.locator("section", has_text="Open questions")
        await expect(questions).to_contain_text(script.question)

        await page.evaluate(
            "document.querySelector('form[action=\"/actions/answer\"] input[name=csrf]')"
            ".value = 'forged'"
        )
        await questions.locator("textarea").fill("consumer")
        await questions.locator("button", has_text="Answer").click()
        await expect(page.locator(".result")).to_contain_text("CSRF")
        assert script.answers_seen == []

        await page.goto(url + "/")
        await questions.locator("textarea").fill("data center only")
        await questions.locator("button", has_text="Answer").click()
        await expect(page.locator(".result")).to_contain_text("Answer sent to alice")
        await slack.until(
            lambda s: any("Report based on: data center only" in p["text"] for p in s.posts), 30
        )
    assert script.answers_seen == ["data center only"]
    assert all(p.get("thread_ts") == ts for p in slack.posts)
    lines = [a for a in audit(tmp_path) if a["type"] == "operator.action"]
    assert [(a["decider"], a["outcome"]) for a in lines] == [
        ("dashboard", "refused: csrf"), ("dashboard", "answered"),
    ], lines  # fmt: skip
