"""The audit log: every step of a gated call (tool call -> request -> decision ->
outcome) with the right platform ids and no content, append-only, across a restart,
printed by `switchboard audit --since 1h --json`; and what a request shows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.core.redact import args_digest
from bot.ledger.audit import parse_duration
from bot.store.core import Store
from bot.store.errors import Conflict
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import Recorder, inbound, running_app
from tests.kits.proc import run_command
from tests.kits.slack_kit import MENTION, post_with, posted, slack_app
from tests.kits.tools_kit import caller, calls, stdio_entry, tools_settings

SECRET = "payroll-db-7"


def settings_for(tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, **env: str) -> Any:
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["restart_*", "run_*"])
    return tools_settings(
        tmp_path, fake, [entry], **slack.env("socket"), SLACK_PACE_SECONDS="0.02", **env
    )


async def test_every_step_of_a_gated_call_is_audited_with_platform_ids_and_no_content(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    settings = settings_for(tmp_path, fake, slack, **database_env)
    async with slack_app(settings) as (app, _):
        await app.mcp.wait_connected(30)
        slack.post(f'{MENTION} call ops__restart_service {{"service": "{SECRET}"}}', channel="C1")
        await slack.until(posted("Approval needed"), 30)
        slack.click(post_with(slack, "Approval needed"), "switchboard_approve", user="UBOB")
        await slack.until(posted(f"result: {SECRET} restarted"), 30)
    assert len(calls(tmp_path / "calls.jsonl", "restart_service")) == 1
    done = run_command(["audit", "--since", "1h", "--json"], _env(settings), tmp_path)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout  # digests, never the arguments or any message
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    steps = [(x["type"], x["outcome"]) for x in lines if x["tool"] == "ops__restart_service"]
    assert steps == [
        ("tool.called", "approval"),
        ("approval.requested", "pending"),
        ("approval.decided", "approved"),
        ("tool.called", "ok"),
    ]
    for line in lines:
        assert (line["conversation"] or "").startswith("slack:C1")
        assert (line["person"], line["person_id"]) == ("UANN", "slack:UANN")
        assert line["agent"] == "coordinator"
    decided = next(x for x in lines if x["type"] == "approval.decided")
    assert (decided["decider"], decided["decider_id"], decided["how"]) == (
        "UBOB", "slack:UBOB", "button",
    )  # fmt: skip
    digest = args_digest({"service": SECRET})
    assert {x["args_digest"] for x in lines if x["tool"] == "ops__restart_service"} == {digest}
    table = run_command(["audit", "--since", "2h"], _env(settings), tmp_path).stdout
    assert "slack:UBOB via button" in table and "UANN (slack:UANN)" not in table
    assert "slack:UANN" in table and "approval.decided" in table
    bad = run_command(["audit", "--since", "yesterday"], _env(settings), tmp_path)
    assert bad.returncode == 2 and "not a duration" in bad.stderr


async def test_the_log_is_append_only_and_survives_a_restart(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    fake.responder = caller
    entry = stdio_entry("ops", tmp_path / "calls.jsonl")
    settings = tools_settings(tmp_path, fake, [entry], **database_env)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        app.human.accept(inbound('call ops__echo {"text": "one"}'))
        await rec.wait_text("result: one", 30)
    store = Store(settings.database)
    try:
        (line,) = store.audit.since(0)
        assert (line.type, line.tool, line.person_id, line.outcome) == (
            "tool.called", "ops__echo", "terminal", "ok",
        )  # fmt: skip
        with pytest.raises(Conflict, match="append-only"):
            store.execute("UPDATE audit SET outcome = 'denied'")
        with pytest.raises(Conflict, match="append-only"):
            store.execute("DELETE FROM audit")
    finally:
        store.close()
    async with running_app(settings, [rec]) as app:  # the same data dir, started again
        await app.mcp.wait_connected(30)
        app.human.accept(inbound('call ops__echo {"text": "two"}'))
        await rec.wait_text("result: two", 30)
        assert [x.tool for x in app.store.audit.since(0)] == ["ops__echo", "ops__echo"]


async def test_a_padding_key_cannot_hide_the_sql(tmp_path: Path, fake: FakeAnthropic) -> None:
    """Keys in the tool's schema order, every argument named, a long value attached in
    full (never cut out of sight)."""
    fake.responder = caller
    entry = stdio_entry("ops", tmp_path / "calls.jsonl", approval=["run_*"])
    settings = tools_settings(tmp_path, fake, [entry])
    rec = Recorder()
    args = {"padding": "x" * 5000, "sql": "DROP TABLE payroll; -- <@U1> ```"}
    async with running_app(settings, [rec]) as app:
        await app.mcp.wait_connected(30)
        app.human.accept(inbound(f"call ops__run_query {json.dumps(args)}"))
        await rec.wait_text("Approval needed", 30)
    ask = next(m for m in rec.sent if "Approval needed" in m.text)
    shown = ask.text.split("```", 1)[1]
    assert shown.index('"sql"') < shown.index('"padding"')  # the schema's order
    assert '"sql": "DROP TABLE payroll; -- \\u003c@U1\\u003e \\u0060\\u0060\\u0060"' in ask.text
    assert '"padding": (5,002 characters, in full in ops__run_query-arguments.json)' in ask.text
    assert ask.text.count("```") == 2 and len(ask.text) < 1000
    (file,) = ask.attachments
    assert file.name == "ops__run_query-arguments.json"
    assert json.loads((settings.data_dir / file.path).read_text()) == args


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "30m", "2h", "3d", "1w")] == [
        90, 90, 1800, 7200, 259200, 604800,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("yesterday")


def _env(settings: Any) -> dict[str, str]:
    url = {"SWITCHBOARD_DATABASE_URL": settings.database} if settings.database_url else {}
    return {"SWITCHBOARD_DATA_DIR": str(settings.data_dir), **url}


def test_an_older_approvals_table_gains_the_new_columns(tmp_path: Path) -> None:
    """A data dir from before: its pending approval still reads, with no requester."""
    db = tmp_path / "switchboard.db"
    old = sqlite3.connect(db)
    old.executescript(
        "CREATE TABLE approvals (id TEXT PRIMARY KEY, agent TEXT NOT NULL,"
        " conversation TEXT NOT NULL, speaker TEXT NOT NULL, tool TEXT NOT NULL,"
        " args TEXT NOT NULL, tool_use_id TEXT NOT NULL, target TEXT NOT NULL,"
        " refs TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL,"
        " settled INTEGER NOT NULL DEFAULT 0, requested_at REAL NOT NULL, deadline REAL,"
        " decided_by TEXT, reason TEXT, decided_at REAL, held TEXT NOT NULL DEFAULT '{}');"
        "INSERT INTO approvals (id, agent, conversation, speaker, tool, args, tool_use_id,"
        " target, status, requested_at) VALUES ('a1', 'coordinator', 'terminal',"
        " 'coordinator', 'ops__x', '{}', 't', 'terminal', 'pending', 1.0);"
    )
    old.close()
    store = Store(db)
    try:
        (row,) = store.approvals.pending()
        assert (row.id, row.requester, row.decider_id, row.how) == ("a1", None, None, None)
        assert store.approvals.decide("a1", True, "Bob", None, "slack:UBOB", "button")
        assert store.approvals.get("a1").decider_id == "slack:UBOB"  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_decision_reads_who_and_how_once() -> None:
    from bot.ledger.audit import describe
    from bot.store.schema import AuditLine

    def decided(decider: str, decider_id: str | None, how: str) -> str:
        line = AuditLine(1, 0.0, "approval.decided", "coordinator", decider=decider,
                         decider_id=decider_id, how=how)  # fmt: skip
        return describe(line)[7]

    assert decided("Ann", "slack:U1", "button") == "Ann (slack:U1) via button"
    assert decided("dashboard", None, "dashboard") == "dashboard"
