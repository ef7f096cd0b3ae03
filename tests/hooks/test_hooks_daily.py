"""A daily summary of the day's alerts: a `[[schedules]]` entry delivering to the hook's
channel; its turn reads that channel (`read_channel`) and posts one summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.ops.hooks_samples import alertmanager
from bot.triggers.reconcile import PREFIX
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.fakes.slack_api import FakeSlack
from tests.kits.hooks_kit import OPS, analyst, entry, hooks_app, hooks_settings, send
from tests.kits.slack_kit import posted

DAILY = f"""
[[schedules]]
name = "alerts-daily"
cron = "0 8 * * *"
deliver_to = "slack:{OPS}"
action = "Summarise the day's alerts in #ops."
"""


def summariser(call: Call) -> list[dict[str, Any]]:
    last = call.last_text
    if "Summarise the day's alerts" in last and not call.tool_results():
        return [tool("read_channel", target=f"slack:{OPS}", since="24h")]
    if call.tool_results() and "ANALYSIS" in last:
        return [text(f"DAILY: {last.count('ANALYSIS')} alert posts today")]
    return analyst(call)


async def test_a_schedule_summarises_the_days_alerts_from_the_hooks_channel(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = summariser
    hook = entry("am", "alertmanager", cooldown_seconds=0)
    async with hooks_app(hooks_settings(tmp_path, fake, slack, [hook], DAILY)) as (app, url):
        for group in ("HighLatency", "DiskFull"):
            assert (await send(url, "am", "alertmanager", alertmanager(group=group)))[0] == 202
        await slack.until(lambda s: sum("ANALYSIS" in p["text"] for p in s.posts) == 2)
        row = app.store.triggers.get(PREFIX + "alerts-daily")
        assert row is not None
        assert app.triggers.firing.fire(row, "2026-11-28T08:00")  # as the scheduler would
        await slack.until(posted("DAILY: 2 alert posts today"))
    daily = [p for p in slack.posts if "DAILY" in p["text"]]
    assert len(daily) == 1 and daily[0]["channel"] == OPS and not daily[0].get("thread_ts")
