"""Hooks end to end: signed requests through the real HTTP server, the agent's turn
against the fake model, its post through the real Slack SDK to the fake Slack."""

from __future__ import annotations

import json
from pathlib import Path

from bot.ops.hooks_samples import alertmanager, pagerduty, workflow_run
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.hooks_kit import OPS, analyst, entry, hooks_app, hooks_settings, send
from tests.kits.slack_kit import posted


async def test_an_alert_group_fires_then_resolves_in_one_thread(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("alerts", "alertmanager",
                              cooldown_seconds=0)])  # fmt: skip
    async with hooks_app(settings) as (_app, url):
        status, body = await send(url, "alerts", "alertmanager", alertmanager("firing", 2))
        assert status == 202, body
        await slack.until(posted("ANALYSIS firing"))
        status, _ = await send(url, "alerts", "alertmanager", alertmanager("resolved", 2))
        assert status == 202
        await slack.until(posted("ANALYSIS resolved"))
    first, second = slack.posts
    assert first["channel"] == OPS and not first.get("thread_ts")
    assert second["channel"] == OPS and second["thread_ts"] == first["ts"]
    assert len(fake.calls) == 2  # one turn each, in the group's one conversation
    assert "firing" in json.dumps(fake.calls[1].body)  # the resolution sees the firing turn


async def test_a_failed_workflow_run_is_handled_by_a_worker_that_posts_a_summary(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("ci", "github", agent="worker",
                              filter={"conclusion": "failure"})])  # fmt: skip
    async with hooks_app(settings) as (_app, url):
        ok, _ = await send(url, "ci", "github", workflow_run("success"))
        failed, _ = await send(url, "ci", "github", workflow_run("failure"))
        assert ok == failed == 202
        await slack.until(posted("Summary: worker read completed,failure"))
    assert len(slack.posts) == 1  # the success was filtered out: journaled, not handled
    assert {c.agent for c in fake.calls} >= {"coordinator"} and any(
        c.agent.startswith("ci-") for c in fake.calls
    )


async def test_a_pagerduty_incident_with_a_verified_signature_is_posted(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("pd", "pagerduty")])
    async with hooks_app(settings) as (app, url):
        status, body = await send(url, "pd", "pagerduty", pagerduty())
        assert status == 202, body
        await slack.until(posted("ANALYSIS incident.triggered"))
        await eventually(lambda: app.ops.hooks is not None
                         and app.ops.hooks.desk.last["pd"]["outcome"] == "posted")  # fmt: skip
    sent = fake.calls[0].all_text
    assert '<untrusted source=\\"pagerduty webhook pd' in sent
    assert "A little bump in the road" in sent and "PGR0VU2" in sent
