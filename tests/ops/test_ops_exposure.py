"""`/healthz` and `/metrics` for a reader without the dashboard token: states and
counts, never an error text or spend; with SWITCHBOARD_METRICS_PUBLIC=false they ask
for the token."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.ops_kit import get, served_app

TOKEN = "a-dashboard-token-for-tests-0123"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
PRICED = {"SWITCHBOARD_MODEL": "claude-sonnet-5", "SWITCHBOARD_DASHBOARD_TOKEN": TOKEN}


async def test_without_the_token_no_error_text_or_spend_is_shown(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **PRICED) as (app, channel, url):
        app.human.accept(inbound("hello"))
        await channel.wait_text("echo:")
        fake.fail(400)
        app.human.accept(inbound("again"))
        await channel.wait_text("refused this request")
        status, text, _ = await get(url + "/healthz")
        public = json.loads(text)
        assert status == 200 and public["channels"] == {"terminal": "connected"}
        assert "error" not in public["llm"] and public["llm"]["last_error"]
        assert public["budget"] == {"exceeded": False}
        _, text, _ = await get(url + "/healthz", headers=BEARER)
        assert "400" in json.loads(text)["llm"]["error"]
        assert "spent_today_usd" in json.loads(text)["budget"]
        status, scrape, _ = await get(url + "/metrics")
        assert status == 200 and "switchboard_llm_calls_total" in scrape
        assert "cost" not in scrape and "budget" not in scrape
        _, scrape, _ = await get(url + "/metrics", headers=BEARER)
        assert "switchboard_llm_cost_usd_total" in scrape


async def test_metrics_public_false_asks_for_the_token(tmp_path: Path, fake: FakeAnthropic) -> None:
    env = {**PRICED, "SWITCHBOARD_METRICS_PUBLIC": "false"}
    async with served_app(tmp_path, fake, **env) as (_app, _channel, url):
        for path in ("/healthz", "/metrics"):
            status, _, headers = await get(url + path)
            assert status == 401 and "Bearer" in headers["WWW-Authenticate"]
            status, _, _ = await get(url + path, headers=BEARER)
            assert status == 200
