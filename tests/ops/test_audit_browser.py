"""The dashboard's /audit page in a real headless Chromium: the tool calls of a
conversation with the person's platform id, a cross-scope line whose resource is
markup shown as text, the `since` links, and a bad `since` said plainly."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import BrowserContext, expect

from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.ops_kit import TOKEN, served_app
from tests.kits.script import TeamScript

EVIL = "<img src=x onerror=alert(1)>/payroll.csv"


async def test_the_audit_page_in_chromium(
    tmp_path: Path, fake: FakeAnthropic, browser: BrowserContext
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, SWITCHBOARD_DASHBOARD_TOKEN=TOKEN) as (app, chan, url):
        app.human.accept(inbound("please research GPUs"))
        await chan.wait_kind("question")
        app.events.emit(
            "scope.crossed", "coordinator", conversation="terminal", person="ann",
            person_id="terminal", tool="read_file", resource=EVIL, outcome="denied",
            content="never shown",
        )  # fmt: skip
        page = await browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))
        await page.goto(url + "/login")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        await page.click("header >> text=Audit")
        rows = page.locator("main table tbody tr")
        await expect(rows.filter(has_text="spawn_worker").first).to_contain_text("ann (terminal)")
        crossed = rows.filter(has_text="scope.crossed")
        await expect(crossed).to_contain_text(EVIL)
        await expect(crossed).to_contain_text("denied")
        await expect(rows.first).to_contain_text("scope.crossed")  # newest first
        assert "never shown" not in await page.content()
        await page.click("text=last 1h")
        await expect(page.locator("main h2")).to_contain_text("Audit log, last 1h")
        await page.goto(url + "/audit?since=yesterday")
        await expect(page.locator(".error")).to_contain_text("not a duration")
        assert dialogs == []
        assert await page.evaluate("document.querySelectorAll('main img').length") == 0
