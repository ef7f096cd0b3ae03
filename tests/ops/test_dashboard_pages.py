"""The dashboard's pages over HTTP, as an operator uses them: conversations found by a
person, a place or words of their first line; events filtered by type and agent; a
channel's and an MCP server's failure on their card; Sign out on every page; actions
that come back to their page with a message, and a stop the worker's thread hears of."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.core.messages import Target
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, inbound
from tests.kits.dashboard_kit import MCP_REASON, REFUSED, seed
from tests.kits.ops_kit import TOKEN, act, served_app, sign_in
from tests.kits.script import TeamScript
from tests.kits.surface_kit import Surface

ENV = {"SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}
PAGES = ["/", "/conversations", "/conversations?q=ann", "/events", "/events?type=tool",
         "/audit", "/conversation?agent=coordinator&key=slack:C1/1006.100000"]  # fmt: skip


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        yield s


async def read(session: aiohttp.ClientSession, url: str) -> str:
    async with session.get(url, headers={"Accept": "text/html"}) as response:
        assert response.status == 200, url
        return await response.text()


def rows(html: str, section_id: str) -> list[str]:
    """The text of each body row of a section's table."""
    part = html.split(f'id="{section_id}"', 1)[1].split("</section>", 1)[0]
    body = part.split("<tbody>", 1)[1] if "<tbody>" in part else ""
    return [re.sub(r"<[^>]+>", " ", r) for r in body.split("</tr>") if "<td" in r]


async def test_conversations_are_listed_by_place_people_and_first_line_and_searched(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        seed(app)
        await sign_in(session, url)
        listed = rows(await read(session, url + "/conversations"), "conversations")
        assert any("Email: Invoice 42 for November" in r and "Carol" in r for r in listed)
        assert any("Slack DM with Ann" in r and "what is our deploy window?" in r for r in listed)
        assert any("Slack channel C1, a thread" in r and "please research AI chips" in r
                   for r in listed)  # fmt: skip
        found = {
            q: rows(await read(session, f"{url}/conversations?q={q}"), "conversations")
            for q in ("carol", "INVOICE", "deploy window", "ann", "nobody-at-all")
        }
    assert [len(found[q]) for q in ("carol", "INVOICE", "deploy window", "ann")] == [1, 1, 1, 2]
    assert "Invoice 42" in found["carol"][0] and "deploy" in found["deploy window"][0]
    assert found["nobody-at-all"] == []


async def test_a_transcript_page_has_no_prompt_markup_and_no_thinking(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        seed(app)
        await sign_in(session, url)
        html = await read(session, url + PAGES[-1])
    main = html.split("<main>", 1)[1]
    for markup in ("[Now:", "untrusted", "[Ann via slack]", "SECRET-THOUGHT", "thinking"):
        assert markup not in main, markup
    assert '<span class="who">Ann (slack):</span> please research AI chips' in main
    assert '<details class="note"><summary>Switchboard notice</summary>' in main
    assert '<details class="tool"><summary>coordinator used spawn_worker</summary>' in main


async def test_events_filter_by_type_and_agent_and_read_in_words(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        seed(app)
        app.events.emit("tool.called", "alice", tool="web_fetch", ok=False, ms=30.0)
        await sign_in(session, url)
        tools = await read(session, url + "/events?type=tool")
        alice = await read(session, url + "/events?type=tool&agent=Alice")
        memory = await read(session, url + "/events?agent=coordinator-helper&type=memory.written")
        overview = await read(session, url + "/")

    def kinds(html: str) -> list[str]:
        return re.findall(r"<b>([a-z_.]+)</b> <span class=agent>([^<]+)</span>", html)

    helper = "Coordinator-Helper"  # by its name as given, not its id
    assert set(kinds(tools)) == {("tool.called", "alice"), ("tool.called", helper)}
    assert len(kinds(tools)) == 38
    assert kinds(alice) == [("tool.called", "alice")] and "web_fetch failed, 30 ms" in alice
    assert kinds(memory) == [("memory.written", helper)] * 13
    for page in (tools, overview):
        assert "&quot;" not in page.split("<main>", 1)[1] and '{"' not in page
    recent = overview.split('id="events"', 1)[1]
    folded = (
        r"Coordinator-Helper</span>: 28 events \(\d+ tool calls, \d+ memory writes\), \d\d:\d\d"
    )
    assert re.search(folded, recent)  # the newest 30: alice's, Ann's message, 28 of the run


async def test_a_failing_channel_and_mcp_server_show_their_reason_on_the_card(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        seed(app)
        await sign_in(session, url)
        card = rows(await read(session, url + "/"), "channels")
    assert any("email" in r and "reconnecting" in r and "Errno 111" in r for r in card)
    assert any("ops" in r and "failed" in r and "No such file or directory" in r for r in card)
    assert REFUSED and MCP_REASON  # the seeded reasons, shown above as written


async def test_every_page_offers_sign_out(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        seed(app)
        await sign_in(session, url)
        for path in PAGES:
            html = await read(session, url + path)
            assert 'action="/logout"' in html and ">Sign out</button>" in html, path
        async with aiohttp.ClientSession() as stranger:
            async with stranger.get(url + "/login") as response:
                login = await response.text()
            async with stranger.get(url + "/favicon.ico") as icon:
                assert icon.status == 204  # asked on every page load: no 404 logged
    assert 'href="/conversations"' not in login  # no nav that leads back to the sign-in


async def test_stop_comes_back_to_the_page_says_so_in_the_thread_and_ends_its_status(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    fake.responder = TeamScript()
    surface = Surface()
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.progress.add("terminal", surface)
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        csrf = await sign_in(session, url)
        # what Alice's announce shows while she waits (the coordinator's turn end in the
        # same conversation may have ended the first one already)
        app.human.progress.status("terminal", "Alice: Waiting for an answer", Target("terminal"))
        await asyncio.sleep(0.1)
        assert surface.shown[-1] == "Alice: Waiting for an answer"
        ended_before = len(surface.ended)
        form = {"worker": "Alice", "csrf": csrf, "back": "/conversations?q=gpu"}
        where, kind, text = await act(session, url + "/actions/stop", form)
        assert where.startswith("/conversations?q=gpu&done=")
        assert (kind, text) == ("ok", "Worker Alice stopped.")
        await channel.wait_text("Worker Alice was stopped by an operator from the dashboard.")
        assert "terminal" not in app.human.progress.works
        await asyncio.sleep(0.1)  # the surface call runs beside the action
        assert surface.ended[ended_before:] == [Target("terminal")]
        await read(session, url + where)  # a reload shows the message and posts nothing
        await read(session, url + where)
    stops = [e for e in events(tmp_path, "operator.action") if e["data"]["action"] == "stop"]
    assert len(stops) == 1 and stops[0]["data"]["outcome"] == "stopped"


async def test_a_waiting_worker_is_answered_from_its_transcript_and_the_page_comes_back(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question", 30)
        csrf = await sign_in(session, url)
        overview = await read(session, url + "/")
        html = await read(session, url + "/conversation?agent=alice&key=task")
        assert "Alice is waiting for an answer: <b>Data center or consumer GPUs?</b>" in html
        back = re.search(r'name="back" value="([^"]+)"', html.split('class="waiting"')[1])
        assert back is not None and back.group(1) == "/conversation?agent=alice&amp;key=task"
        [qid] = app.human.directory.questions
        form = {"question": qid, "text": "consumer", "csrf": csrf,
                "back": "/conversation?agent=alice&key=task"}  # fmt: skip
        where, kind, text = await act(session, url + "/actions/answer", form)
        assert where.startswith("/conversation?agent=alice&key=task&done=")
        assert (kind, text) == ("ok", "Answer sent to Alice.")
        await channel.wait_text("Report based on: consumer")
    assert 'key=terminal">Terminal</a>' in overview  # asked in: the place by its name
    assert "<summary>Stop\u2026</summary>" in overview and ">Stop Alice</button>" in overview
