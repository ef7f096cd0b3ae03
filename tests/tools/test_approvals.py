"""Approvals: a gated MCP call waits for a person's yes, runs exactly once, and
survives kill -9 anywhere (the real test MCP server counts what it ran)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.core.messages import Sender, Target
from bot.ledger import status
from bot.ledger.report import full_status
from bot.store.core import Store
from bot.store.errors import StoreError
from bot.triggers import build_spec
from config.settings import Database
from tests.fakes.anthropic_api import FakeAnthropic, text, tool, unwrap
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app
from tests.kits.proc import Switchboard
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings, write_config
from tests.kits.trigger_kit import EmailRecorder

RESTART = 'call ops__restart_service {"service": "api"}'


def gated(calls_file: Path, **extra: Any) -> dict[str, Any]:
    return stdio_entry("ops", calls_file, approval=["restart_*"], **extra)


async def request(app: Any, rec: Recorder, line: str = RESTART, **kw: Any) -> None:
    app.human.accept(inbound(line, **kw))
    await rec.wait_text("Approval needed", 30)


async def test_approved_in_the_terminal_runs_once(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(tmp_path, fake, [gated(calls_file)], **database_env)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        await request(app, rec)
        ask = next(m.text for m in rec.sent if "Approval needed" in m.text)
        assert "coordinator wants to run ops__restart_service" in ask
        assert '"service": "api"' in ask and "`approve` or `deny <reason>`" in ask
        assert calls(calls_file, "restart_service") == []
        assert "ops__restart_service" in full_status(app.store)
        app.human.accept(inbound("approve"))
        await rec.wait_text("result: api restarted", 30)
        assert any(m.text.startswith("Approved by ann (terminal) at ") for m in rec.sent)
        app.human.accept(inbound("approve"))  # a second approve: nothing runs again
        await rec.wait_text("There is no approval waiting in this conversation.")
        assert len(calls(calls_file, "restart_service")) == 1
        # the model saw one tool_result for the same tool_use, with the tool's output
        result = fake.calls[-1].tool_results()[-1]
        assert unwrap(result["content"]) == "api restarted" and not result.get("is_error")
        kinds = [e["type"] for e in events(settings.data_dir, "approval.")]
        assert kinds == ["approval.requested", "approval.decided"]
        assert "Pending approvals: none" in full_status(app.store)


async def test_denied_with_a_reason(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(tmp_path, fake, [gated(calls_file)], **database_env)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        await request(app, rec)
        app.human.accept(inbound("deny not during the launch"))
        await rec.wait_text(
            "result ERROR: Error: denied by ann (terminal): not during the launch", 30
        )
        assert any("Denied by ann (terminal) at " in m.text for m in rec.sent)
        assert calls(calls_file, "restart_service") == []


async def test_only_approvers_decide_and_other_conversations_go_on(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(
        tmp_path, fake, [gated(calls_file)], SWITCHBOARD_APPROVERS="bob, Carol"
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        await request(app, rec)
        app.human.accept(inbound("approve", sender="mallory"))
        await rec.wait_text("Only approvers (SWITCHBOARD_APPROVERS) can decide this")
        # another conversation is served while this one waits
        app.human.accept(inbound('call ops__echo {"text": "meanwhile"}', conversation="other"))
        await rec.wait_text("result: meanwhile", 30)
        assert calls(calls_file, "restart_service") == []
        app.human.accept(inbound("approve", sender="bob"))
        await rec.wait_text("result: api restarted", 30)
        assert len(calls(calls_file, "restart_service")) == 1


async def test_silence_past_the_timeout_is_a_denial(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(
        tmp_path, fake, [gated(calls_file)], SWITCHBOARD_APPROVAL_TIMEOUT_SECONDS="0.5"
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        await request(app, rec)
        await rec.wait_text("result ERROR: Error: no decision within 0.5 s, treated as denied", 30)
        assert any(
            m.text.startswith("No decision within 0.5 s, treated as denied") for m in rec.sent
        )
        app.human.accept(inbound("approve"))  # too late
        await rec.wait_text("There is no approval waiting in this conversation.")
        assert calls(calls_file, "restart_service") == []


async def test_approve_with_nothing_pending_is_a_short_note(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = caller
    settings = tools_settings(tmp_path, fake, [])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("approve"))
        await rec.wait_text("There is no approval waiting in this conversation.")
        assert not fake.calls  # no agent read it


def _chat(tmp_path: Path, fake: FakeAnthropic, config: Path, **database_env: str) -> Switchboard:
    env = {**fake.env(), "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"), **database_env}
    return Switchboard(["--config", str(config), "chat"], env, tmp_path)


async def test_kill_9_while_waiting_then_approved_after_restart(
    tmp_path: Path, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    config = write_config(tmp_path / "s.toml", [gated(calls_file)])
    bot = _chat(tmp_path, fake, config)
    try:
        await eventually(lambda: _connected(tmp_path / "data" / "switchboard.db"), 30)
        bot.send(RESTART)
        bot.expect("Approval needed", 30)
        assert _server_line(_rendered(tmp_path)).split()[2] == "connected"  # live
        bot.kill()
    finally:
        _stop(bot)
    # its last beat has aged past STALE_AFTER: status must not claim a live connection
    monkeypatch.setattr(status, "STALE_AFTER", 0.0)
    after = _rendered(tmp_path)
    assert "Switchboard: not running" in after
    assert "MCP servers (Switchboard not running: last known)" in after
    assert "unknown (was connected)" in _server_line(after)
    assert "ops__restart_service" in after  # the pending approval is still listed
    monkeypatch.undo()
    bot = _chat(tmp_path, fake, config)
    try:
        await eventually(lambda: _connected(tmp_path / "data" / "switchboard.db"), 30)
        bot.send("approve")
        bot.expect("result: api restarted", 30)
    finally:
        _stop(bot)
    assert len(calls(calls_file, "restart_service")) == 1


async def test_kill_9_while_the_approved_call_runs_is_not_rerun(
    tmp_path: Path, fake: FakeAnthropic, database: Database, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    calls_file = tmp_path / "calls.jsonl"
    config = write_config(tmp_path / "s.toml", [gated(calls_file, env={"SLOW_RESTART": "5"})])
    bot = _chat(tmp_path, fake, config, **database_env)
    where = tmp_path / "data" / "switchboard.db" if isinstance(database, Path) else database
    try:
        await eventually(lambda: _connected(where), 30)
        bot.send(RESTART)
        bot.expect("Approval needed", 30)
        bot.send("approve")
        await eventually(lambda: len(calls(calls_file, "restart_service")) == 1, 30)
        bot.kill()
    finally:
        _stop(bot)
    bot = _chat(tmp_path, fake, config, **database_env)
    try:
        bot.expect("result ERROR: Error: the outcome of ops__restart_service is unknown", 30)
    finally:
        _stop(bot)
    assert len(calls(calls_file, "restart_service")) == 1


def _rendered(tmp_path: Path) -> str:
    store = Store(tmp_path / "data" / "switchboard.db", readonly=True)
    try:
        return full_status(store)
    finally:
        store.close()


def _server_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("ops "))


def _stop(bot: Switchboard) -> None:
    if bot.proc.poll() is None:
        bot.quit()


def _connected(db: Database, word: str = "connected") -> bool:
    """The MCP server `ops` is `word` in the store at `db` (once the bot created it)."""
    if isinstance(db, Path) and not db.exists():
        return False
    try:
        store = Store(db, readonly=True)
    except StoreError:  # PostgreSQL: the schema is still being created
        return False
    try:
        return word in (store.get_kv("mcp:ops") or "")
    except StoreError:  # the database is still being created
        return False
    finally:
        store.close()


def test_two_pending_in_one_thread_a_reply_takes_the_latest_a_button_its_own(
    database: Database,
) -> None:
    from bot.approvals.desk import ApprovalDesk, Decider
    from bot.core.events import EventLog
    from bot.core.messages import Outbound
    from bot.store.approvals import ApprovalRow

    store = Store(database)
    said: list[Outbound] = []
    desk = ApprovalDesk(store, EventLog(None), said.append)
    for n, at in (("older", 1.0), ("newer", 2.0)):
        # asked by Bob: a request nobody is known to have asked is decided by approvers
        # only (issue 28: scope never fails open), and Ann decides these
        row = ApprovalRow(n, "coordinator", "terminal", "coordinator", f"ops__{n}", {}, "t",
                          "slack:C1/1.0", requested_at=at, requester="UBOB",
                          requester_id="slack:UBOB")  # fmt: skip
        with store.tx():
            desk.request(row, Outbound("coordinator", Target("terminal"), "ask"))
    with store.tx():
        assert desk.answers(inbound("deny not now"), None)
    assert store.approvals.get("newer").status == "denied"  # type: ignore[union-attr]
    assert store.approvals.get("older").status == "pending"  # type: ignore[union-attr]
    ann = Decider.of("slack", Sender("UANN", "Ann"), None, "button")
    assert desk.click("newer", True, ann, "C1")[0] == "already"
    assert desk.click("older", True, ann, "C1")[0] == "decided"
    assert [r.id for r in store.approvals.pending()] == []
    store.close()


async def test_a_worker_waits_for_approval_and_gets_the_result(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """A worker's gated call parks the worker only; the tool's output is its tool_result."""

    def script(call: Any) -> list[dict[str, Any]]:
        if call.agent == "coordinator":
            if "published its result" in call.last_text:
                return [text("relayed: " + call.last_text.split("]: ", 1)[1])]
            if call.tool_results():
                return [text("Bob is on it.")]
            if "restart" in call.last_text:
                return [tool("spawn_worker", name="Bob", task="restart the api")]
            return [text("coordinator heard: " + call.last_text)]
        results = call.tool_results()
        if results:
            return [tool("publish", result="worker got: " + unwrap(str(results[-1]["content"])))]
        return [tool("ops__restart_service", service="api")]

    fake.responder = script
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(tmp_path, fake, [gated(calls_file)])
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        app.human.accept(inbound("please restart the api"))
        await rec.wait_text("Approval needed: Bob wants to run ops__restart_service", 30)
        app.human.accept(inbound("what is new?"))  # the coordinator is not held up
        await rec.wait_text("coordinator heard:", 30)
        assert calls(calls_file, "restart_service") == []
        app.human.accept(inbound("approve"))
        await rec.wait_text("relayed: worker got: api restarted", 30)
    assert len(calls(calls_file, "restart_service")) == 1


async def test_approve_answers_a_workers_open_question_when_no_approval_waits(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    from tests.kits.script import TeamScript

    fake.responder = TeamScript(question="Shall I merge the PR?")
    rec = Recorder()
    async with running_app(tools_settings(tmp_path, fake, []), [rec]) as app:
        app.human.accept(inbound("research the PR"))
        await rec.wait_kind("question", 30)
        app.human.accept(inbound("approve"))
        await rec.wait_text("Report based on: approve", 30)
    assert not any("no approval waiting" in m.text for m in rec.sent)


@pytest.mark.parametrize(
    ("env", "asked_in"),
    [
        (
            {"SWITCHBOARD_APPROVAL_VIA": "email:ops@example.com", "SWITCHBOARD_HOME": "terminal"},
            "email:ops@example.com",
        ),
        ({"SWITCHBOARD_HOME": "email:home@example.com"}, "email:home@example.com"),
    ],
    ids=["approval_via", "home"],
)
async def test_work_with_no_conversation_asks_via_approval_via_else_home(
    tmp_path: Path, fake: FakeAnthropic, env: dict[str, str], asked_in: str
) -> None:
    """A worker a trigger started belongs to no conversation: its request goes to
    SWITCHBOARD_APPROVAL_VIA, else SWITCHBOARD_HOME; the decision notice follows it."""

    def script(call: Any) -> list[dict[str, Any]]:
        if call.agent == "coordinator":
            return [text("relayed: " + call.last_text[-60:])]
        results = call.tool_results()
        if results:
            return [tool("publish", result="worker got: " + unwrap(str(results[-1]["content"])))]
        return [tool("ops__restart_service", service="api")]

    fake.responder = script
    calls_file = tmp_path / "calls.jsonl"
    settings = tools_settings(tmp_path, fake, [gated(calls_file)], **env)
    rec, mail = Recorder(), EmailRecorder()
    async with running_app(settings, [rec, mail]) as app:
        await app.mcp.wait_connected(30)
        spec = build_spec("delayed", {"delay_seconds": 0.1, "agent": "Bob"}, "restart the api")
        assert app.triggers.create(spec, "coordinator").conversation is None
        await mail.wait_text("Approval needed: Bob wants to run ops__restart_service", 30)
        ask = next(m for m in mail.sent if "Approval needed" in m.text)
        assert str(ask.target) == asked_in
        assert not any("Approval needed" in m.text for m in rec.sent)
        assert calls(calls_file, "restart_service") == []
        outcome = app.human.approvals.decide(
            str(ask.meta["approval_id"]), True, "Ann", None, decider_id="email:ann@x.org",
            how="email",
        )  # fmt: skip
        assert outcome == "decided"
        await mail.wait_text("Approved by Ann (email:ann@x.org) at ", 30)
        assert str(next(m for m in mail.sent if "Approved by" in m.text).target) == asked_in
        await eventually(lambda: len(calls(calls_file, "restart_service")) == 1, 30)
