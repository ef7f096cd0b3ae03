"""The dashboard's pages in a real headless Chromium at 1366 and 1920 px, checked by what
they contain: no word broken across lines (each word's rendered boxes, from
`Range.getClientRects`, sit on one line; only ids may break anywhere), no page wider
than the window, no raw JSON, no prompt markup, no thinking. A screenshot of each
page at each width is kept in tests/output/ for a person to look at.

The check is shown to fail: a cell forced to break words is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.dashboard_kit import seed
from tests.kits.ops_kit import TOKEN, served_app
from tests.kits.script import TeamScript

OUTPUT = Path(__file__).parents[1] / "output"
WIDTHS = (1366, 1920)
PAGES = {
    "overview": "/",
    "conversations": "/conversations",
    "search": "/conversations?q=ann",
    "transcript": "/conversation?agent=coordinator&key=slack:C1/1006.100000",
    "events": "/events",
    "events-filtered": "/events?type=tool&agent=coordinator-helper",
    "audit": "/audit",
    "catchup-people": "/catchup",
    "catchup": "/catchup?person=terminal",
}
#: the words of every text node under `main` (ids, preformatted text and charts aside)
#: whose rendered boxes lie on more than one line
BROKEN_WORDS = """
() => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector("main"),
                                           NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest(".id, pre, svg, textarea")) continue;
    const words = /[^\\s\\-\\u2013\\u2014\\/]+/g;
    for (let m = words.exec(node.textContent); m; m = words.exec(node.textContent)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()]
        .filter((r) => r.width > 0).map((r) => Math.round(r.bottom)));
      if (lines.size > 1) broken.push(m[0]);
    }
  }
  return broken;
}
"""
TEXT = "() => document.querySelector('main').innerText"
WIDE = "() => document.documentElement.scrollWidth - window.innerWidth"
MARKUP = ("[Now:", "<untrusted", "untrusted source", "[Ann via slack]", "SECRET-THOUGHT",
          '{"', '":', "&quot;")  # fmt: skip


async def sign_in(page: Page, url: str) -> None:
    await page.goto(url + "/")
    await page.fill("input[name=token]", TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("#agents")).to_contain_text("coordinator")


@pytest.mark.slow
async def test_no_page_breaks_a_word_at_1366_or_1920_px(
    tmp_path: Path, fake: FakeAnthropic, browser: BrowserContext
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, SWITCHBOARD_DASHBOARD_TOKEN=TOKEN) as (app, ch, url):
        app.human.accept(inbound("please research GPUs for the reconnecting datacentre"))
        await ch.wait_kind("question", 30)
        seed(app)
        page = await browser.new_page()
        await sign_in(page, url)
        OUTPUT.mkdir(exist_ok=True)
        seen: dict[tuple[str, int], str] = {}
        for width in WIDTHS:
            await page.set_viewport_size({"width": width, "height": 900})
            for name, path in PAGES.items():
                await page.goto(url + path)
                await page.screenshot(path=str(OUTPUT / f"dashboard-{name}-{width}.png"),
                                      full_page=True)  # fmt: skip
                assert await page.evaluate(BROKEN_WORDS) == [], (name, width)
                assert await page.evaluate(WIDE) <= 0, (name, width)
                seen[(name, width)] = await page.evaluate(TEXT)
                assert await page.locator("header button", has_text="Sign out").count() == 1
        for (name, width), text in seen.items():
            assert not [m for m in MARKUP if m in text], (name, width)
        overview = seen[("overview", 1366)]
        for words in ("Coordinator-Helper", "reconnecting", "Should I include providers",
                      "Errno 111", "No such file or directory", "Stop", "Answer"):  # fmt: skip
            assert words in overview, words
        assert "Ann (slack): please research AI chips" in seen[("transcript", 1920)]
        assert "Email: Invoice 42 for November" in seen[("conversations", 1366)]
        catchup = seen[("catchup", 1920)]  # the person at the terminal: their own only
        assert "Data center or consumer GPUs?" in catchup and "asks (open)" in catchup
        assert "Should I include providers" not in catchup  # Carol asks in a Slack thread
        assert "terminal (last spoke" in seen[("catchup-people", 1366)]

        # the check can fail: a cell made to break anywhere is caught
        await page.set_viewport_size({"width": 1366, "height": 900})
        await page.goto(url + "/")
        await page.evaluate(
            "() => { const td = [...document.querySelectorAll('#agents td')]"
            ".find((c) => c.textContent.includes('reconcile the quarterly'));"
            " td.style.wordBreak = 'break-all'; td.style.display = 'block';"
            " td.style.width = '5em'; }"
        )
        assert await page.evaluate(BROKEN_WORDS) != []
