"""The dashboard acts, in a real headless Chromium: a logged-in operator stops a
worker, answers a worker's open question, approves and denies a gated call; a form
with a forged CSRF token changes nothing. Every action is audited."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import BrowserContext, Page, expect

from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, inbound
from tests.kits.ops_kit import RESTART, TOKEN, gated_app, served_app
from tests.kits.script import TeamScript
from tests.kits.tools_kit import caller, calls

ENV = {"SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}


async def sign_in(page: Page, url: str) -> None:
    await page.goto(url + "/")
    await page.fill("input[name=token]", TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("#agents")).to_contain_text("coordinator")


def actions(data_dir: Path) -> list[tuple[str, str]]:
    found = events(data_dir, "operator.action")
    return [(e["data"]["action"], e["data"]["outcome"]) for e in found]


async def test_stop_a_worker_and_answer_a_question_from_the_dashboard(
    tmp_path: Path,
    fake: FakeAnthropic,
    browser: BrowserContext,
) -> None:
    script = TeamScript()
    fake.responder = script
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        page = await browser.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        await sign_in(page, url)
        await expect(page.locator("#charts svg")).to_have_count(4)
        assert await page.locator("#charts svg").first.bounding_box() is not None

        # a forged CSRF token: refused, the question stays open
        answer = page.locator("section", has_text="Open questions")
        await page.evaluate(
            "document.querySelector('form[action=\"/actions/answer\"] input[name=csrf]')"
            ".value = 'forged'"
        )
        await answer.locator("textarea").fill("consumer")
        await answer.locator("button", has_text="Answer").click()
        await expect(page.locator(".flash")).to_contain_text("CSRF check failed")
        assert len(app.human.directory.questions) == 1 and script.answers_seen == []

        await page.goto(url + "/")
        row = page.locator("#agents tr", has_text="Alice")
        await row.locator("summary", has_text="Stop").click()  # Stop asks once more
        await row.locator("button", has_text="Stop Alice").click()
        await expect(page.locator(".flash")).to_have_text("Worker Alice stopped.")
        assert app.human.directory.questions == {}

        app.human.accept(inbound("please research GPUs again"))
        await channel.wait_for(lambda sent: sum(m.kind == "question" for m in sent) == 2)
        await page.goto(url + "/")
        await answer.locator("textarea").fill("data center only")
        await answer.locator("button", has_text="Answer").click()
        await expect(page.locator(".flash")).to_have_text("Answer sent to Alice.")
        await channel.wait_text("Report based on: data center only")
        assert any(t == "An operator answered from the dashboard: data center only"
                   for t in channel.texts())  # fmt: skip
    assert script.answers_seen == ["data center only"]
    assert not [m for m in console if "Content Security Policy" in m], console
    assert actions(tmp_path) == [
        ("answer", "refused: csrf"), ("stop", "stopped"), ("answer", "answered"),
    ]  # fmt: skip
    audit = events(tmp_path, "operator.action")[-1]["data"]
    assert audit["decider"] == "dashboard" and audit["how"] == "dashboard"
    assert audit["conversation"] == "terminal"


async def test_approve_and_deny_with_a_reason_from_the_dashboard(
    tmp_path: Path,
    fake: FakeAnthropic,
    browser: BrowserContext,
) -> None:
    fake.responder = caller
    async with gated_app(tmp_path, fake) as (app, channel, url):
        app.human.accept(inbound(RESTART))
        await channel.wait_text("Approval needed", 30)
        page = await browser.new_page()
        await sign_in(page, url)
        pending = page.locator("section", has_text="Pending approvals")
        await pending.locator("button", has_text="Approve").click()
        await expect(page.locator(".flash")).to_have_text("ops__restart_service approved.")
        await channel.wait_text("result: api restarted", 30)
        assert any(t.startswith("Approved by dashboard at ") for t in channel.texts())

        app.human.accept(inbound(RESTART, conversation="other"))
        await channel.wait_for(lambda s: sum("Approval needed" in m.text for m in s) == 2, 30)
        await page.goto(url + "/")
        await pending.locator("input[name=reason]").fill("not during the launch")
        await pending.locator("button", has_text="Deny").click()
        await expect(page.locator(".flash")).to_have_text("ops__restart_service denied.")
        await channel.wait_text("denied by dashboard: not during the launch", 30)
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1
    assert actions(tmp_path / "data") == [("approve", "approved"), ("deny", "denied")]
