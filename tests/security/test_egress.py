"""Nothing leaves unseen (security review #10): once untrusted content is in a turn, a web
fetch or an MCP tool that sends needs a person's yes, unless its host is allowed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents.loop.marking import untrusted
from agents.tools.egress import sends_matcher
from agents.tools.seen import read
from config.tools import McpServerConfig
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.security_kit import fetch_settings, hostile_site
from tests.kits.tools_kit import caller, calls, content_of, stdio_entry, tools_settings

# -- #10: nothing leaves unseen --------------------------------------------------------
NEXT = re.compile(r"go on to (\S+)")


def hostile_model(call: Call) -> list[dict[str, Any]]:
    """A model a page steers: `call <tool> {json}` from a person calls it; a result that
    says `go on to <url>` is fetched next (the injected step); any other result is said."""
    results = call.tool_results()
    if results:
        said = content_of(results[-1])
        steered = NEXT.search(said)
        if steered and not results[-1].get("is_error"):
            return [tool("web_fetch", url=steered.group(1))]
        flag = " ERROR" if results[-1].get("is_error") else ""
        return [text(f"result{flag}: {said[:300]}")]
    return caller(call)


async def test_p1b_a_page_cannot_send_the_conversation_to_a_host_nobody_named(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = hostile_model
    async with hostile_site() as (port, asked):
        rec = Recorder()
        async with running_app(fetch_settings(tmp_path, fake), [rec]) as app:
            app.human.accept(inbound(f'call web_fetch {{"url": "http://127.0.0.1:{port}/"}}'))
            await rec.wait_text("Approval needed", 30)
            request = next(m.text for m in rec.sent if "Approval needed" in m.text)
            assert request.startswith("Outside this conversation: `http://localhost/…`")
            assert r"untrusted content \(the result of web\_fetch\)" in request
            assert "the-secret-plan" in request  # the approver sees what would leave
            assert asked == ["/"]  # the page was read; nothing went to /log
            app.human.accept(inbound("deny not our site"))
            await rec.wait_text("result ERROR: Error: denied by ann", 30)
        assert asked == ["/"]
    crossed = events(tmp_path / "data", "scope.crossed")
    assert [(e["data"]["tool"], e["data"]["resource"], e["data"]["outcome"]) for e in crossed] == [
        ("web_fetch", "http://localhost/…", "approval")
    ]
    assert "the-secret-plan" not in json.dumps(crossed)  # the audit holds no content


async def test_p1b_an_approved_fetch_runs_once_and_an_allowed_host_needs_no_yes(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = hostile_model
    async with hostile_site() as (port, asked):
        rec = Recorder()
        async with running_app(fetch_settings(tmp_path, fake), [rec]) as app:
            app.human.accept(inbound(f'call web_fetch {{"url": "http://127.0.0.1:{port}/"}}'))
            await rec.wait_text("Approval needed", 30)
            app.human.accept(inbound("approve"))
            await rec.wait_text("result: ", 30)
        assert asked == ["/", "/log?q=the-secret-plan"]
        asked.clear()
        rec = Recorder()
        allow = fetch_settings(tmp_path / "allow", fake, SWITCHBOARD_WEB_ALLOW="*host")
        async with running_app(allow, [rec]) as app:
            app.human.accept(inbound(f'call web_fetch {{"url": "http://127.0.0.1:{port}/"}}'))
            await rec.wait_text("result: ", 30)
        assert asked == ["/", "/log?q=the-secret-plan"]  # localhost matches *host
        assert not any("Approval needed" in m.text for m in rec.sent)


async def test_p1b_an_address_a_person_gave_is_fetched_and_deny_mode_refuses(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = caller
    async with hostile_site() as (port, asked):
        rec = Recorder()
        env = {"SWITCHBOARD_CROSS_SCOPE": "deny"}
        async with running_app(fetch_settings(tmp_path, fake, **env), [rec]) as app:
            first = f'call web_fetch {{"url": "http://127.0.0.1:{port}/"}}'
            app.human.accept(inbound(first))
            await rec.wait_text("Status: green", 30)
            # tainted now: the same page again, and a URL the person writes, still run
            app.human.accept(inbound(first))
            await rec.wait_for(lambda s: sum("Status: green" in m.text for m in s) == 2, 30)
            given = f'call web_fetch {{"url": "http://localhost:{port}/log?q=mine"}}'
            app.human.accept(inbound(given))
            await rec.wait_for(
                lambda s: s[-1].text.startswith("result: ") and "logged" in s[-1].text, 30
            )
            # a query the person did not write is refused at once (deny mode)
            fake.responder = lambda call: (
                caller(call) if call.tool_results() else
                [tool("web_fetch", url=f"http://localhost:{port}/log?q=theirs")]
            )  # fmt: skip
            app.human.accept(inbound("log it again"))
            await rec.wait_text("result ERROR: Error: refused: this conversation holds", 30)
    assert asked == ["/", "/", "/log?q=mine"]


def test_what_a_conversation_has_seen_is_read_from_its_messages() -> None:
    person = untrusted(
        "see https://status.example.com/api?v=1 and docs.example.org",
        "slack message",
        "Ann",
        "[Ann via slack]: ",
    )
    clean = [
        {"role": "user", "content": [{"type": "text", "text": "[Now: 2026-11-27 10:00 UTC]"},
                                      {"type": "text", "text": person}]},
    ]  # fmt: skip
    seen = read(clean, "system", "slack:C1/1")
    assert seen.why is None
    assert seen.supplied("https://status.example.com/api?v=1")
    assert seen.supplied("https://docs.example.org/") and seen.supplied("http://status.example.com")
    assert not seen.supplied("https://status.example.com/api?v=2")
    assert not seen.supplied("https://docs.example.org/search?q=secret")
    assert not seen.supplied("https://x.docs.example.org/")
    assert not seen.supplied("http://[::1") and not seen.supplied("https://status.example.com:1/")
    with_result = [
        *clean,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                           "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]  # fmt: skip
    assert read(with_result, None, "slack:C1/1").why == "the result of read_file"
    worker = [{"role": "user", "content": "Your task: fetch the page"}]
    assert read(worker, None, "slack:C1/1").why is not None  # another agent's words
    foreign = '<untrusted source="memory written in slack:CPUBLIC/1 (memory/2026-11-27.md)">'
    assert read(clean, foreign, "slack:C1/1").why == "memory a model wrote in slack:CPUBLIC/1"
    own = '<untrusted source="memory written in slack:C1/1 (memory/2026-11-27.md)">'
    assert read(clean, own, "slack:C1/1").why is None


def test_an_mcp_tool_marked_sends_is_known_unless_it_is_gated_already() -> None:
    sends = sends_matcher([("mail", ["send_*"], []), ("ops", ["*"], ["restart_*"])])
    assert sends("mail__send_mail") and not sends("mail__list_inbox")
    assert sends("ops__deploy_status") and not sends("ops__restart_service")
    assert not sends("web_fetch") and not sends("other__send_mail")
    assert McpServerConfig(name="m", command="x", sends=True).sends == ["*"]  # type: ignore[arg-type]


async def test_an_ungated_mcp_tool_marked_sends_waits_for_a_yes_once_content_is_untrusted(
    tmp_path: Path, fake: FakeAnthropic, calls_file_path: Path
) -> None:
    fake.responder = caller
    entry = stdio_entry("ops", calls_file_path, sends=["echo"])
    rec = Recorder()
    async with running_app(tools_settings(tmp_path, fake, [entry]), [rec]) as app:
        await app.mcp.wait_connected(30)
        app.human.accept(inbound('call ops__echo {"text": "hello"}'))  # nothing read yet
        await rec.wait_text("result: hello", 30)
        app.human.accept(inbound('call ops__deploy_status {"service": "api"}'))
        await rec.wait_for(lambda s: sum(m.text.startswith("result: ") for m in s) == 2, 30)
        app.human.accept(inbound('call ops__echo {"text": "the status, out"}'))
        await rec.wait_text("Approval needed", 30)
        request = next(m.text for m in rec.sent if "Approval needed" in m.text)
        assert request.startswith("Outside this conversation: `whatever ops__echo sends`")
        assert len(calls(calls_file_path, "echo")) == 1
        app.human.accept(inbound("approve"))
        await rec.wait_text("result: the status, out", 30)
    assert len(calls(calls_file_path, "echo")) == 2
