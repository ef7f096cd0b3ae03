"""MCP tools: a real SDK server (tests/servers/mcp_ops.py) over stdio and streamable HTTP,
driven by the app's own client, with the fake LLM calling the tools."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.ledger.report import full_status
from bot.store.core import Store
from config.settings import SettingsError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app
from tests.kits.tools_kit import caller, calls, http_entry, http_server, stdio_entry, tools_settings


async def ask(app: Any, rec: Recorder, line: str) -> str:
    before = len(rec.sent)
    app.human.accept(inbound(line))
    sent = await rec.wait_for(lambda s: len(s) > before and s[-1].text.startswith("result"), 30)
    return sent[-1].text


@pytest.fixture
def calls_file(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


async def test_stdio_tools_are_offered_sorted_and_called(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    settings = tools_settings(tmp_path, fake, [stdio_entry("ops", calls_file)])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        reply = await ask(app, rec, 'call ops__deploy_status {"service": "api"}')
        assert reply == "result: api: deployed v42, healthy"
        names = fake.calls[-1].tool_names
        mcp_names = [n for n in names if n.startswith("ops__")]
        assert mcp_names == sorted(mcp_names) and "ops__restart_service" in mcp_names
        # the tool list is byte-identical between the two turns (prompt cache)
        tools = [json.dumps(c.body["tools"], sort_keys=True) for c in fake.calls[-2:]]
        assert tools[0] == tools[1]
        assert [(c["tool"], c["args"]) for c in calls(calls_file)] == [
            ("deploy_status", {"service": "api"})
        ]
        done = [e for e in events(settings.data_dir, "tool.called") if e["data"]["tool"] != ""]
        assert done[-1]["data"]["tool"] == "ops__deploy_status" and done[-1]["data"]["ok"] is True
        assert done[-1]["data"]["ms"] > 0


async def test_results_structured_error_image_and_cut(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    settings = tools_settings(
        tmp_path, fake, [stdio_entry("ops", calls_file)], SWITCHBOARD_TOOL_RESULT_MAX_CHARS="500"
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        assert await ask(app, rec, 'call ops__add {"a": 2, "b": 3}') == 'result: {"sum":5}'
        failed = await ask(app, rec, 'call ops__fail {"why": "disk full"}')
        assert failed.startswith("result ERROR: Error from ops__fail:")
        picture = await ask(app, rec, "call ops__picture {}")
        assert '"type": "image"' in picture and '"media_type": "image/png"' in picture
        big = await ask(app, rec, 'call ops__big {"n": 2000}')
        assert "x" * 500 + "\n[... cut: the result was 2,000 characters" in big
        # arguments the schema refuses never reach the server
        refused = await ask(app, rec, 'call ops__add {"a": "two", "b": 3}')
        assert refused.startswith("result ERROR: Error: bad arguments for ops__add: a:")
        assert [c["args"] for c in calls(calls_file, "add")] == [{"a": 2, "b": 3}]
        flags = [e["data"]["ok"] for e in events(settings.data_dir, "tool.called")]
        assert flags == [True, False, True, True, False]


async def test_a_hung_call_times_out_and_a_dying_server_is_restarted(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    entry = stdio_entry("ops", calls_file, timeout_seconds=1.5)
    settings = tools_settings(tmp_path, fake, [entry])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        hung = await ask(app, rec, 'call ops__slow {"seconds": 30}')
        assert hung == (
            "result ERROR: Error: ops__slow did not complete: no answer from ops within 1.5 s"
        )
        died = await ask(app, rec, "call ops__die {}")
        assert died.startswith("result ERROR: Error: ops__die did not complete:")
        client = app.mcp.clients["ops"]
        await eventually(lambda: client.state == "connected" and client.restarts >= 1, 30)
        again = await ask(app, rec, 'call ops__echo {"text": "back"}')
        assert again == "result: back"
        kinds = [e["type"] for e in events(settings.data_dir, "mcp.")]
        assert "mcp.restarting" in kinds and kinds[-1] == "mcp.connected"


async def test_a_server_that_will_not_start_is_reported_and_the_rest_works(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    broken = {"name": "broken", "command": str(tmp_path / "no-such-binary")}
    settings = tools_settings(
        tmp_path, fake, [broken, stdio_entry("ops", calls_file, "--garbage", "--bad-tools")]
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await asyncio.wait_for(app.mcp.clients["ops"].connected.wait(), 30)
        await eventually(lambda: app.mcp.clients["broken"].state == "failed", 10)
        assert await ask(app, rec, 'call ops__echo {"text": "fine"}') == "result: fine"
        names = fake.calls[-1].tool_names
        assert "ops__weird" not in names and not any("has.dot" in n for n in names)
        gone = await ask(app, rec, 'call broken__anything {"x": 1}')
        assert gone.startswith("result ERROR: Error: there is no tool 'broken__anything'")
        refused = {e["data"]["tool"] for e in events(settings.data_dir, "mcp.tool_refused")}
        assert refused == {"has.dot", "weird"}
        status = full_status(app.store)
    store = Store(settings.db_path, readonly=True)
    try:
        assert "MCP servers" in status
        line = next(li for li in status.splitlines() if li.startswith("broken"))
        assert "failed" in line and "cannot start" in line
        line = next(li for li in status.splitlines() if li.startswith("ops "))
        assert "connected" in line
    finally:
        store.close()


async def test_tools_list_changed_is_honoured(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    settings = tools_settings(tmp_path, fake, [stdio_entry("ops", calls_file)])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        version = app.mcp.version
        assert await ask(app, rec, "call ops__grow {}") == "result: grown"
        await eventually(lambda: app.mcp.version > version, 10)
        assert await ask(app, rec, "call ops__fresh {}") == "result: new"
        assert "ops__fresh" in fake.calls[-1].tool_names


async def test_streamable_http_server_down_and_back(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    with http_server(calls_file) as server:
        entry = http_entry("web", server.url, timeout_seconds=3, headers={"X-Team": "ops"})
        settings = tools_settings(tmp_path, fake, [entry])
        rec = Recorder()
        async with running_app(settings, [rec]) as app:
            client = app.mcp.clients["web"]
            client._ping_seconds = 0.3
            await app.mcp.wait_connected(30)
            assert await ask(app, rec, 'call web__echo {"text": "over http"}') == (
                "result: over http"
            )
            server.stop()
            await eventually(lambda: client.state != "connected", 15)
            down = await ask(app, rec, 'call web__echo {"text": "x"}')
            assert (
                down.startswith("result ERROR: Error: there is no tool") or "not connected" in down
            )
            server.start()
            await eventually(lambda: client.state == "connected", 30)
            assert await ask(app, rec, 'call web__echo {"text": "again"}') == "result: again"


def test_env_values_name_environment_variables(tmp_path: Path, fake: FakeAnthropic) -> None:
    entry = stdio_entry("ops", tmp_path / "c", env={"TOKEN": "${OPS_TOKEN}"})
    settings = tools_settings(tmp_path, fake, [entry], OPS_TOKEN="s3cret")
    assert settings.mcp_servers[0].env["TOKEN"] == "s3cret"
    with pytest.raises(SettingsError, match=r"OPS_TOKEN is not set .*'ops'"):
        tools_settings(tmp_path, fake, [entry])
    with pytest.raises(SettingsError, match="either command"):
        tools_settings(tmp_path, fake, [{"name": "x"}])


async def test_agents_names_who_sees_a_servers_tools(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path
) -> None:
    fake.responder = caller
    servers = [
        stdio_entry("ops", calls_file, agents="coordinator"),
        stdio_entry("lab", calls_file, agents=["workers"]),
    ]
    settings = tools_settings(tmp_path, fake, servers)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        assert await ask(app, rec, 'call ops__echo {"text": "mine"}') == "result: mine"
        names = fake.calls[-1].tool_names
        assert "ops__echo" in names and not any(n.startswith("lab__") for n in names)
        refused = await ask(app, rec, 'call lab__echo {"text": "theirs"}')
        assert refused.startswith("result ERROR: Error: there is no tool 'lab__echo'")
        from agents.services import AgentInfo

        worker = [t.spec.name for t in app.mcp.source(AgentInfo("bob", "worker")).tools()]
        assert "lab__echo" in worker and "ops__echo" not in worker


async def test_http_headers_reach_the_server_and_the_secret_stays_out_of_sight(
    tmp_path: Path, fake: FakeAnthropic, calls_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`headers` values with `${VAR}` are sent as written once the variable is read; the
    secret is in no event, status line, log record, prompt or file of the data dir."""
    caplog.set_level(logging.DEBUG)
    fake.responder = caller
    secret, wrong = "s3cret-9f2c1e", "wr0ng-77ab31"
    with http_server(calls_file, REQUIRE_AUTH=f"Bearer {secret}") as server:
        auth = {"Authorization": "Bearer ${OPS_TOKEN}"}
        locked = {"Authorization": "Bearer ${OLD_TOKEN}"}
        settings = tools_settings(
            tmp_path, fake,
            [http_entry("web", server.url, headers=auth),
             http_entry("locked", server.url, headers=locked, timeout_seconds=3)],
            OPS_TOKEN=secret, OLD_TOKEN=wrong,
        )  # fmt: skip
        rec = Recorder()
        async with running_app(settings, [rec]) as app:
            await asyncio.wait_for(app.mcp.clients["web"].connected.wait(), 30)
            assert await ask(app, rec, 'call web__echo {"text": "hi"}') == "result: hi"
            await eventually(lambda: app.mcp.clients["locked"].state != "starting", 30)
            assert app.mcp.clients["locked"].state in ("failed", "restarting")
            status = full_status(app.store)
    seen = {row["args"]["authorization"] for row in calls(calls_file, "http_request")}
    assert seen == {f"Bearer {secret}", f"Bearer {wrong}"}  # each as configured, nothing else
    assert len(calls(calls_file, "echo")) == 1
    locked_line = next(li for li in status.splitlines() if li.startswith("locked "))
    assert "failed" in locked_line and "HTTP 401 Unauthorized (check the entry" in locked_line
    prompts = " ".join(c.all_text + str(c.tool_names) for c in fake.calls)
    stored = b"".join(p.read_bytes() for p in settings.data_dir.rglob("*") if p.is_file())
    for token in (secret, wrong):
        assert token not in status and token not in caplog.text and token not in prompts
        assert token.encode() not in stored  # events.jsonl, the database, any log file
    assert (settings.data_dir / "events.jsonl").exists()
