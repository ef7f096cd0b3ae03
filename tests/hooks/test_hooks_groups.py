"""Alert groups and triggers: a storm of notifications for one group is one more turn,
in the group's thread; `hook.<name>` events fire `on_event` triggers (filters, pause)
made in the hook's channel, and no trigger of another channel's conversation."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.trigger_spec import TriggerSpec
from bot.ops import hooks_desk
from bot.ops.hooks_samples import alertmanager
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.hooks_kit import analyst, entry, hooks_app, hooks_settings, paging, send
from tests.kits.slack_kit import posted


async def test_a_storm_for_one_group_is_one_turn_in_its_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("am", "alertmanager",
                              cooldown_seconds=1)])  # fmt: skip
    async with hooks_app(settings) as (app, url):
        answers = [await send(url, "am", "alertmanager", alertmanager("firing", n)) for n in
                   range(1, 7)]  # fmt: skip
        assert [status for status, _ in answers] == [202] * 6
        await slack.until(lambda s: len(s.posts) >= 2, timeout=15)
        await eventually(lambda: app.store.inbound_by_status("hook") == [])
        assert app.ops.hooks is not None
        outcomes = [d["outcome"] for d in app.ops.hooks.desk.recent]
    first, second = slack.posts
    assert second["thread_ts"] == first["ts"]
    assert len(fake.calls) == 2
    assert "4 earlier notification(s) of this group" in fake.calls[1].last_text
    assert '"alerts_firing": 6' in fake.calls[1].last_text  # the newest one
    assert outcomes.count("coalesced") == 4


async def test_hook_events_fire_triggers_made_in_the_hooks_channel(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = paging
    hook = entry("am", "alertmanager", cooldown_seconds=0)
    settings = hooks_settings(tmp_path, fake, slack, [hook])
    critical = {"event_pattern": "hook.am", "filter": {"severity": "critical"}}
    spec = TriggerSpec("on_event", critical, "Page the on-call.")
    async with hooks_app(settings) as (app, url):
        here = app.triggers.create(spec, "coordinator", "slack:COPS/1700.000001",
                                   "slack:COPS/1700.000001")  # fmt: skip
        app.triggers.create(spec, "coordinator", "slack:COTHER/1.1", "slack:COTHER/1.1")
        warning = {"event_pattern": "hook.am", "filter": {"severity": "warning"}}
        app.triggers.create(TriggerSpec("on_event", warning, "Page the on-call."),
                            "coordinator", "slack:COPS/1.2", "slack:COPS/1.2")  # fmt: skip
        assert (await send(url, "am", "alertmanager", alertmanager()))[0] == 202
        await slack.until(posted("PAGED hook.am from hook:am"))
        await slack.until(posted("ANALYSIS firing"))
        app.triggers.pause(here.id)
        assert (await send(url, "am", "alertmanager", alertmanager("resolved")))[0] == 202
        await slack.until(posted("ANALYSIS resolved"), timeout=15)
    paged = [p for p in slack.posts if "PAGED" in p["text"]]
    assert len(paged) == 1 and paged[0]["thread_ts"] == "1700.000001"
    assert all(p["channel"] == "COPS" for p in slack.posts)


async def test_idle_alert_groups_leave_memory_and_come_back_in_their_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_GROUPS the idle groups leave the desk's memory (an incident a day for
    months would otherwise stay); a group that fires again answers in its own thread."""
    monkeypatch.setattr(hooks_desk, "MAX_GROUPS", 3)
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("am", "alertmanager",
                              cooldown_seconds=0)])  # fmt: skip
    async with hooks_app(settings) as (app, url):
        assert app.ops.hooks is not None
        desk = app.ops.hooks.desk
        for n in range(8):
            assert (await send(url, "am", "alertmanager", alertmanager(group=f"G{n}")))[0] == 202
            await slack.until(lambda s, n=n: len(s.posts) >= n + 1, timeout=15)
            await eventually(lambda: not any(g.awaiting_post for g in desk.groups.values()))
        assert len(desk.groups) <= 3
        first = slack.posts[0]
        assert (await send(url, "am", "alertmanager", alertmanager("resolved", group="G0")))[
            0
        ] == 202
        await slack.until(lambda s: len(s.posts) >= 9, timeout=15)
    assert slack.posts[-1]["thread_ts"] == first["ts"]
