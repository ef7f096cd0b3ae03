"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright):
log in, see the coordinator and a parked worker's open question, watch an event
arrive live, open a conversation, and see a person's `<script>` as text."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import BrowserContext, Page, expect

from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.ops_kit import TOKEN, served_app
from tests.kits.script import TeamScript

OUTPUT = Path(__file__).parents[1] / "output"
DOCS = Path(__file__).parents[2] / "docs"
EVIL = "<script>alert('owned')</script> please research GPUs"


async def test_dashboard_in_chromium(
    tmp_path: Path, fake: FakeAnthropic, browser: BrowserContext
) -> None:
    fake.responder = TeamScript()
    env = {"SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}
    async with served_app(tmp_path, fake, **env) as (app, channel, url):
        app.human.accept(inbound(EVIL))
        await channel.wait_kind("question")
        page = await browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))

        response = await page.goto(url + "/")
        assert response is not None and response.status == 401
        await page.fill("input[name=token]", "wrong-token-wrong-token")
        await page.click("button[type=submit]")
        await expect(page.locator(".error")).to_have_text("That token is not right.")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")

        agents = page.locator("#agents")
        await expect(agents).to_contain_text("coordinator")
        await expect(agents.locator("tr", has_text="Alice")).to_contain_text("parked")
        questions = page.locator("section", has_text="Open questions")
        await expect(questions).to_contain_text("Data center or consumer GPUs?")
        await expect(questions).to_contain_text("terminal")

        await expect(page.locator("#live-status")).to_have_text("live")
        app.human.accept(inbound("@coordinator a message while the page is open"))
        live = page.locator("#live-events li.live", has_text="message.received")
        await expect(live.first).to_be_visible()
        assert page.url == url + "/"  # no reload: the item came over the event stream

        await _screenshot(page)
        await page.click("header >> text=Conversations")
        await page.locator("#conversations a", has_text="Terminal").click()
        transcript = page.locator(".msg .said", has_text="<script>alert('owned')</script>")
        await expect(transcript.first).to_be_visible()
        assert await page.evaluate("document.querySelectorAll('main script').length") == 0
        assert dialogs == []
        page_html = await page.content()
        assert TOKEN not in page_html


async def _screenshot(page: Page) -> None:
    OUTPUT.mkdir(exist_ok=True)
    await page.set_viewport_size({"width": 1400, "height": 1000})
    await page.screenshot(path=str(OUTPUT / "dashboard.png"), full_page=True)
