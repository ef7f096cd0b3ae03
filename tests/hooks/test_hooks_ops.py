"""Hooks seen and managed: `/healthz` (last delivery per hook), `/metrics`, the
dashboard's hooks card, the audit log, `switchboard status`, and
`switchboard hooks test <name>` sending the running bot a signed sample."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from bot.ledger.report import full_status
from bot.ops.hooks_samples import alertmanager
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import eventually
from tests.kits.hooks_kit import analyst, entry, hooks_app, hooks_settings, send
from tests.kits.proc import run_command
from tests.kits.slack_kit import posted


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_deliveries_show_on_healthz_metrics_dashboard_status_and_audit(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    hook = entry("am", "alertmanager", cooldown_seconds=0)
    async with hooks_app(hooks_settings(tmp_path, fake, slack, [hook])) as (app, url):
        assert (await send(url, "am", "alertmanager", alertmanager()))[0] == 202
        assert (await send(url, "am", "alertmanager", alertmanager()))[0] == 200
        assert (await send(url, "am", "alertmanager", b"{}", headers={}))[0] == 401
        await slack.until(posted("ANALYSIS firing"))
        assert app.ops.hooks is not None
        desk = app.ops.hooks.desk
        await eventually(lambda: desk.last["am"]["outcome"] == "posted")
        _, health = await _get(url + "/healthz")
        _, metrics = await _get(url + "/metrics")
        _, dashboard = await _get(url + "/")
        desk.take()  # writes what status reads
        status = full_status(app.store)
    hooks = json.loads(health)["hooks"]
    assert hooks["am"]["count"] == 1 and hooks["am"]["outcome"] == "posted"
    assert 'switchboard_hook_deliveries_total{hook="am",outcome="accepted"} 1.0' in metrics
    assert 'switchboard_hook_deliveries_total{hook="am",outcome="duplicate"} 1.0' in metrics
    assert 'switchboard_hook_rejections_total{hook="am",status="401"} 1.0' in metrics
    assert "switchboard_hook_post_seconds_count" in metrics
    assert "switchboard_hook_ack_seconds_bucket" in metrics
    assert 'id="hooks"' in dashboard and "handed to coordinator" in dashboard
    assert "hooks: am 1 taken" in status and "posted" in status
    lines = [json.loads(x) for x in (tmp_path / "data" / "events.jsonl").read_text().splitlines()]
    outcomes = [e["data"].get("outcome") for e in lines if e["agent_id"] == "hook:am"
                and e["type"] in ("operator.action", "access.refused")]  # fmt: skip
    assert outcomes[:2] == ["accepted", "duplicate"] and "refused 401" in outcomes[2]


async def test_hooks_test_sends_a_signed_sample_to_the_running_bot(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack
) -> None:
    fake.responder = analyst
    settings = hooks_settings(tmp_path, fake, slack, [entry("ci", "github")])
    env = {"SWITCHBOARD_HTTP_PORT": str(settings.listen_port)}
    args = ["--config", str(tmp_path / "switchboard.toml"), "hooks", "test"]
    async with hooks_app(settings) as (_app, _url):
        done = await asyncio.to_thread(run_command, [*args, "ci"], env, tmp_path)
        assert done.returncode == 0, done.stderr
        assert ": 202 " in done.stdout
        await slack.until(posted("ANALYSIS completed,failure"))
        unknown = await asyncio.to_thread(run_command, [*args, "nope"], env, tmp_path)
    assert unknown.returncode == 2 and "no hook named 'nope'" in unknown.stderr
