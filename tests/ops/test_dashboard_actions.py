"""Dashboard actions and sessions over plain HTTP: what a form without a session or
CSRF token, a stale id, or a question answered meanwhile gets; the session cookie
(random per login, expiring, logged out, Secure by configuration); the Host check
of a dashboard without a token (DNS rebinding)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from bot.triggers import build_spec
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, inbound, node
from tests.kits.ops_kit import TOKEN, act, get, post, served_app, sign_in
from tests.kits.script import TeamScript

ENV = {"SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    jar = aiohttp.CookieJar(unsafe=True)  # keep cookies of 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as s:
        yield s


async def test_forms_without_a_session_or_csrf_change_nothing(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        [qid] = app.human.directory.questions
        form = {"question": qid, "text": "consumer"}
        async with aiohttp.ClientSession() as stranger:
            status, _ = await post(stranger, url + "/actions/answer", form)
        assert status == 401
        csrf = await sign_in(session, url)
        status, text = await post(session, url + "/actions/answer", form)
        assert status == 403 and "CSRF" in text
        status, _ = await post(session, url + "/actions/answer", {**form, "csrf": "0" * 64})
        assert status == 403
        assert list(app.human.directory.questions) == [qid]
        where, kind, text = await act(session, url + "/actions/answer", {**form, "csrf": csrf})
        assert (where.split("?")[0], kind, text) == ("/", "ok", "Answer sent to Alice.")
        await channel.wait_text("Report based on: consumer")


async def test_a_stale_id_or_a_question_answered_meanwhile_gets_a_clear_answer(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    script = TeamScript()
    fake.responder = script
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        [qid] = app.human.directory.questions
        csrf = await sign_in(session, url)
        app.human.accept(inbound("consumer"))  # answered in the thread meanwhile
        _, kind, text = await act(
            session, url + "/actions/answer", {"question": qid, "text": "data center", "csrf": csrf}
        )
        assert (kind == "error" and "nothing" not in text.lower()) or "answered" in text
        await channel.wait_text("Report based on: consumer")
        for path, form in [
            ("/actions/answer", {"question": "nope", "text": "x"}),
            ("/actions/decide", {"approval": "nope", "approve": "1"}),
            ("/actions/stop", {"worker": "Nobody"}),
            ("/actions/new", {"conversation": "nope"}),
        ]:
            _, kind, text = await act(session, url + path, {**form, "csrf": csrf})
            assert kind == "error" and text, (path, text)
    assert script.answers_seen == ["consumer"]
    outcomes = [e["data"]["outcome"] for e in events(tmp_path, "operator.action")]
    assert outcomes[0] in ("already answered", "stale") and outcomes[1:] == ["stale"] * 4


async def test_an_answer_routed_but_not_yet_taken_is_not_answered_twice(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        [qid] = app.human.directory.questions
        csrf = await sign_in(session, url)
        app.human.answering.add(qid)  # what routing a reply in the thread records
        _, kind, text = await act(
            session, url + "/actions/answer", {"question": qid, "text": "x", "csrf": csrf}
        )
        assert kind == "error" and "answered that question meanwhile" in text


async def test_each_login_is_its_own_session_and_logout_ends_it(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (_app, _channel, url):
        csrf = await sign_in(session, url)
        first = session.cookie_jar.filter_cookies(URL(url))["switchboard_session"]
        jar2 = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar2) as other:
            await sign_in(other, url)
            second = jar2.filter_cookies(URL(url))["switchboard_session"]
        assert first.value != second.value and len(first.value) >= 32
        status, _ = await post(session, url + "/logout", {"csrf": csrf})
        assert status == 200  # redirected to the login form
        status, _, _ = await get(url + "/", cookies={"switchboard_session": first.value})
        assert status == 401
        status, _, _ = await get(url + "/", cookies={"switchboard_session": second.value})
        assert status == 200


async def test_the_cookie_is_secure_by_configuration_not_by_a_header(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    for env, secure in (({}, False), ({"SWITCHBOARD_COOKIE_SECURE": "true"}, True)):
        async with served_app(tmp_path / str(secure), fake, **ENV, **env) as (_a, _c, url):
            async with aiohttp.ClientSession() as s, s.post(
                url + "/login", data={"token": TOKEN}, allow_redirects=False,
                headers={"X-Forwarded-Proto": "https"},
            ) as response:  # fmt: skip
                cookie = response.headers["Set-Cookie"]
        assert ("Secure" in cookie) is secure, cookie
        assert "Max-Age=43200" in cookie


async def test_without_a_token_only_the_loopback_host_is_answered(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake) as (_app, _channel, url):
        port = url.rsplit(":", 1)[1]
        status, _, _ = await get(url + "/")
        assert status == 200
        status, _, _ = await get(url + "/", headers={"Host": f"localhost:{port}"})
        assert status == 200
        status, text, _ = await get(url + "/", headers={"Host": f"evil.example:{port}"})
        assert status == 403 and "loopback" in text
        status, _, _ = await get(url + "/events/stream", headers={"Host": "evil.example"})
        assert status == 403


async def test_an_operator_cancels_any_trigger_but_the_config_files(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, _channel, url):
        spec = build_spec("scheduled", {"cron": "0 9 * * *"}, "standup")
        row = app.triggers.create(spec, "alice", "c1", "terminal")
        csrf = await sign_in(session, url)
        async with session.get(url + "/") as response:
            assert f'value="{row.id}"' in await response.text()  # its Cancel form
        form = {"trigger": row.id, "csrf": csrf}
        _, kind, text = await act(session, url + "/actions/cancel", form)
        assert kind == "ok" and "cancelled" in text
        assert app.triggers.table.get(row.id).status == "cancelled"  # type: ignore[union-attr]
        _, kind, _ = await act(session, url + "/actions/cancel", form)
        assert kind == "error"
    audit = events(tmp_path, "operator.action")[0]["data"]
    assert audit["action"] == "cancel" and audit["decider"] == "dashboard"


async def test_an_operator_starts_a_conversation_afresh(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession
) -> None:
    async with served_app(tmp_path, fake, **ENV) as (app, channel, url):
        app.human.accept(inbound("the code word is heron"))
        await channel.wait_count(1)
        csrf = await sign_in(session, url)
        async with session.get(url + "/conversations") as response:
            assert 'action="/actions/new"' in await response.text()
        form = {"conversation": "terminal", "csrf": csrf}
        status, text = await post(session, url + "/actions/new", form)
        assert status == 200 and "starts afresh" in text
        await channel.wait_text("Started a new conversation")
        messages, _ = app.store.agents.load_conversation("coordinator", "terminal")
        assert messages == []
    assert list((tmp_path / "agents" / "coordinator" / "archive").glob("terminal-*.jsonl"))
    audit = events(tmp_path, "operator.action")[-1]["data"]
    assert audit["action"] == "new" and audit["outcome"] == "fresh"


async def test_a_followers_dashboard_names_the_leader_for_actions_on_the_agents(
    tmp_path: Path, fake: FakeAnthropic, session: aiohttp.ClientSession, pg_url: str
) -> None:
    fake.responder = TeamScript()
    leader, _ = await node(tmp_path, fake, pg_url, "a")
    try:
        env = {**ENV, "SWITCHBOARD_DATABASE_URL": pg_url, "SWITCHBOARD_NODE_ID": "b"}
        async with served_app(tmp_path / "b", fake, **env) as (app, _channel, url):
            assert app.node.role == "follower"
            csrf = await sign_in(session, url)
            form = {"conversation": "terminal", "csrf": csrf}
            _, kind, text = await act(session, url + "/actions/new", form)
            assert kind == "error" and "node a" in text
        audit = events(tmp_path / "b", "operator.action")[-1]["data"]
        assert audit["outcome"] == "refused: follower"
    finally:
        await leader.stop()
