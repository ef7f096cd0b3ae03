"""Trigger rules: on_event filters match inside list-valued fields; patterns and filter
fields that no event has are refused with what exists; a trigger belongs to its maker
(others see it; only the maker or the coordinator changes it); pause_trigger and
resume_trigger; `enabled = false` in [[schedules]]; `schedule`'s top-level timezone, agent
and action_type, and the local time its result gives."""

from __future__ import annotations

import ast
import pathlib
import re
from pathlib import Path

import pytest

from agents.services import AgentInfo
from agents.tools.toolbox import Tool, Toolbox, ToolError
from agents.tools.triggers import SCHEDULE, TriggerTools
from bot.core.known_events import KNOWN_EVENTS, OPEN_FIELDS
from bot.triggers import TriggerError, build_spec
from config.settings import load_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app
from tests.kits.trigger_kit import outcomes, trigger_settings

ROOT = pathlib.Path(__file__).parents[2]


def emitted() -> dict[str, set[str]]:
    """Every constant event type `emit`ted in the code, with its keyword fields."""
    found: dict[str, set[str]] = {}
    for folder in ("bot", "agents", "channels"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "emit"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    keys = found.setdefault(str(node.args[0].value), set())
                    keys.update(k.arg for k in node.keywords if k.arg)
    return found


def test_the_known_events_cover_every_emit_in_the_code() -> None:
    for event_type, fields in emitted().items():
        assert event_type in KNOWN_EVENTS, f"{event_type} is missing from bot/core/known_events.py"
        if event_type not in OPEN_FIELDS:
            assert fields <= set(KNOWN_EVENTS[event_type]), (event_type, fields)


def on_event(pattern: str, filter: dict[str, str] | None = None) -> None:
    build_spec("on_event", {"event_pattern": pattern, "filter": filter or {}}, "act")


def test_unknown_patterns_and_filter_fields_are_refused_with_what_exists() -> None:
    with pytest.raises(TriggerError) as caught:
        on_event("deploy.finished")
    assert "matches no event" in str(caught.value) and "worker.completed" in str(caught.value)
    with pytest.raises(TriggerError, match="matches no event"):
        on_event("trigger.*")  # a trigger's own events never fire triggers
    with pytest.raises(TriggerError) as caught:
        on_event("worker.completed", {"colour": "red"})
    assert "'colour'" in str(caught.value) and "result" in str(caught.value)
    on_event("worker.*", {"agent_id": "alice"})
    on_event("message.received", {"to": "coordinator"})


async def test_a_filter_matches_inside_a_list_valued_field(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = trigger_settings(tmp_path / "data", fake)
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        spec = build_spec(
            "on_event",
            {"event_pattern": "message.received", "filter": {"to": "coordinator"},
             "action_type": "send_message"},
            "someone wrote to the coordinator",
            min_interval=0.1,
        )  # fmt: skip
        row = app.triggers.create(spec, "coordinator", None, "terminal")
        app.human.accept(inbound("hello"))
        await rec.wait_text("someone wrote to the coordinator")
        await eventually(lambda: outcomes(app, row.id) == ["fired"])


def tools(app: object, agent: str) -> TriggerTools:
    kind = "coordinator" if agent == "coordinator" else "worker"
    return TriggerTools(app.triggers, AgentInfo(agent, kind, "c1"))  # type: ignore[attr-defined]


async def test_a_trigger_belongs_to_its_maker_and_pauses_and_resumes(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = trigger_settings(tmp_path / "data", fake)
    async with running_app(settings, [Recorder()]) as app:
        spec = build_spec("scheduled", {"cron": "0 9 * * *"}, "standup", min_interval=0.1)
        mine = app.triggers.create(spec, "alice", "c1", "terminal")
        theirs = app.triggers.create(spec, "coordinator", "c1", "terminal")
        alice, bob, coordinator = (tools(app, a) for a in ("alice", "bob", "coordinator"))
        assert theirs.id in await bob.list({})  # everyone sees every trigger
        for verb in (bob.cancel, bob.pause):
            with pytest.raises(ToolError, match="belongs to alice"):
                await verb({"trigger_id": mine.id})
        with pytest.raises(ToolError, match="belongs to coordinator"):
            await alice.cancel({"trigger_id": theirs.id})
        assert "paused" in await alice.pause({"trigger_id": mine.id})
        assert app.triggers.scheduler.get_job(mine.job_id) is None
        assert f"{mine.id} PAUSED" in await bob.list({})
        with pytest.raises(ToolError, match="no active trigger"):
            await alice.pause({"trigger_id": mine.id})
        assert "resumed; next fire" in await alice.resume({"trigger_id": mine.id})
        assert app.triggers.scheduler.get_job(mine.job_id) is not None
        assert "cancelled" in await coordinator.cancel({"trigger_id": mine.id})
        with pytest.raises(ToolError, match="no active trigger 'nope'"):
            await alice.cancel({"trigger_id": "nope"})
    kinds = [e["type"] for e in events(tmp_path / "data", "trigger.")]
    assert {"trigger.paused", "trigger.resumed", "trigger.cancelled"} <= set(kinds)


async def test_a_disabled_schedule_is_kept_paused(tmp_path: Path, fake: FakeAnthropic) -> None:
    config = tmp_path / "switchboard.toml"
    entry = '[[schedules]]\nname = "standup"\ncron = "0 9 * * 1-5"\naction = "Ask for updates"\n'
    config.write_text(entry + "enabled = false\n")
    env = {**fake.env(), "SWITCHBOARD_DATA_DIR": str(tmp_path / "data")}
    async with running_app(load_settings(config, env), [Recorder()]) as app:
        row = app.triggers.table.get("config:standup")
        assert row is not None and row.status == "paused"
        assert app.triggers.scheduler.get_job(row.job_id) is None
        with pytest.raises(ToolError, match="enabled = true"):
            await tools(app, "coordinator").resume({"trigger_id": row.id})
    config.write_text(entry)
    async with running_app(load_settings(config, env), [Recorder()]) as app:
        row = app.triggers.table.get("config:standup")
        assert row is not None and row.status == "active"
        assert app.triggers.scheduler.get_job(row.job_id) is not None


async def test_schedule_takes_zone_agent_and_action_type_top_level_and_echoes_local_time(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = trigger_settings(tmp_path / "data", fake)  # the bot's own zone: UTC
    async with running_app(settings, [Recorder()]) as app:
        coordinator = tools(app, "coordinator")
        at = {"at": "2030-02-12T09:00:00"}
        base = {"action": "Review starts", "deliver_to": "terminal"}
        top = await coordinator.schedule(
            {**base, "type": "at_time", "config": at, "timezone": "Europe/Berlin",
             "action_type": "send_message", "agent": "alice"}
        )  # fmt: skip
        assert "next run 2030-02-12 09:00 Europe/Berlin (08:00 UTC)" in top
        assert "On firing it posts the action as written" in top
        row = app.triggers.table.live()[-1]
        assert (row.spec.timezone, row.spec.action_type, row.spec.agent) == (
            "Europe/Berlin",
            "send_message",
            "alice",
        )
        # inside config, as the contract has it; top-level wins where both are given
        inside = await coordinator.schedule(
            {**base, "type": "scheduled", "timezone": "Asia/Tokyo",
             "config": {"cron": "30 7 * * *", "timezone": "UTC", "agent": "alice"}}
        )  # fmt: skip
        assert re.search(r"next run \S+ 07:30 Asia/Tokyo \(\S+ 22:30 UTC\)", inside), inside
        assert "wakes alice with the action as its task" in inside
        naive = await coordinator.schedule({**base, "type": "at_time", "config": at})
        assert "next run 2030-02-12 09:00 UTC (times without an offset are in UTC)" in naive
        box = Toolbox([Tool(SCHEDULE, coordinator.schedule)])
        wrong = await box.call("schedule", {**base, "type": "delayed", "action_type": "post",
                                            "config": {"delay_seconds": 60}})  # fmt: skip
        assert wrong.is_error and "action_type" in wrong.text and "wake_agent" in wrong.text
