"""`/healthz` and `/metrics` on the running app's HTTP server, LLM usage and cost,
the daily budget, and a port already in use."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from bot.ledger.report import full_status
from bot.ledger.usage import usage_section
from config.settings import SettingsError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, eventually, inbound, make_settings, running_app
from tests.kits.ops_kit import get, samples, served_app, value
from tests.kits.proc import Switchboard
from tests.kits.script import TeamScript

PRICED = {"SWITCHBOARD_MODEL": "claude-sonnet-5"}


async def test_healthz_is_200_while_every_channel_is_connected(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake) as (_app, channel, url):
        status, text, headers = await get(f"{url}/healthz")
        body = json.loads(text)
        assert status == 200 and headers["Content-Type"].startswith("application/json")
        assert body["status"] == "ok" and body["channels"] == {"terminal": "connected"}
        assert body["scheduler"] == "running" and body["store"] == "ok"
        assert body["llm"]["last_success"] is None
        channel.set("reconnecting")
        status, text, _ = await get(f"{url}/healthz")
        assert status == 503
        assert json.loads(text)["status"] == "degraded"
        assert json.loads(text)["channels"] == {"terminal": "reconnecting"}


async def test_healthz_reports_the_llm_last_success_and_error(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake) as (app, channel, url):
        app.human.accept(inbound("hello"))
        await channel.wait_text("echo:")
        fake.fail(400)
        app.human.accept(inbound("again"))
        await channel.wait_text("refused this request")
        status, text, _ = await get(f"{url}/healthz")
    llm = json.loads(text)["llm"]
    assert status == 200  # a model outage is reported, not a reason to restart us
    assert llm["last_success"] and llm["last_error"] >= llm["last_success"]
    assert "400" in llm["error"]


async def test_metrics_count_messages_model_calls_tokens_and_cost(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = TeamScript()
    async with served_app(tmp_path, fake, **PRICED) as (app, channel, url):
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")
        status, text, headers = await get(f"{url}/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = samples(text)
    assert (
        value(m, "switchboard_inbound_messages_total", channel="terminal", result="accepted") == 1
    )
    assert value(m, "switchboard_routing_decisions_total", decision="coordinator") == 1
    sent = value(m, "switchboard_outbound_messages_total", channel="terminal", result="sent")
    assert sent == len(channel.sent) >= 2
    assert value(m, "switchboard_llm_calls_total", agent_kind="coordinator", outcome="ok") == 2
    assert value(m, "switchboard_llm_calls_total", agent_kind="worker", outcome="ok") == 1
    assert value(m, "switchboard_llm_call_duration_seconds_count", agent_kind="worker") == 1
    input_tokens = sum(  # as the fake counts them: the same whether streamed or not
        len(json.dumps({k: v for k, v in c.body.items() if k != "stream"})) // 4 for c in fake.calls
    )
    counted = sum(
        value(m, "switchboard_llm_tokens_total", agent_kind=k, type="input")
        for k in ("coordinator", "worker")
    )
    assert counted == input_tokens
    cost = value(m, "switchboard_llm_cost_usd_total", agent_kind="coordinator")
    assert cost > 0 and value(m, "switchboard_llm_cost_today_usd") == pytest.approx(
        cost + value(m, "switchboard_llm_cost_usd_total", agent_kind="worker")
    )
    assert value(m, "switchboard_workers", state="parked") == 1
    assert value(m, "switchboard_open_questions") == 1
    assert value(m, "switchboard_outbox_pending") == 0
    assert value(m, "switchboard_channel_up", channel="terminal") == 1
    assert ("switchboard_event_loop_lag_seconds", ()) in m
    assert (
        value(m, "switchboard_pending_approvals") == 0
        and ("switchboard_pending_approvals", ()) in m
    )


async def test_usage_is_recorded_per_agent_and_status_shows_today(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = TeamScript()
    settings = make_settings(tmp_path, fake, **PRICED)
    async with running_app(settings) as app:
        channel = app.channels[0]
        app.human.accept(inbound("please research GPUs"))
        await channel.wait_kind("question")  # type: ignore[attr-defined]
        per_agent = {t.agent: t for t in app.store.usage.by_agent(0)}
        status = full_status(app.store)
    assert set(per_agent) == {"coordinator", "alice"}
    assert per_agent["coordinator"].calls == 2 and per_agent["alice"].calls == 1
    price = settings.price("claude-sonnet-5")
    assert price is not None
    alice = per_agent["alice"]
    assert alice.output_tokens > 10  # the fake's 10, and the thinking billed as output
    expected = price.cost(alice.input_tokens, alice.output_tokens, 0, 0)
    assert alice.cost_usd == pytest.approx(expected)
    assert "LLM usage today" in status and "coordinator" in status.split("LLM usage today")[1]
    assert "$" in status.split("LLM usage today")[1] and "unknown" not in status


async def test_a_model_without_a_price_costs_unknown_not_zero(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, SWITCHBOARD_MODEL="claude-sonnet-9") as (app, ch, url):
        app.human.accept(inbound("hello"))
        await ch.wait_text("echo:")
        _, text, _ = await get(f"{url}/metrics")
        section = usage_section(app.store)
    m = samples(text)
    assert value(m, "switchboard_llm_unpriced_calls_total", model="claude-sonnet-9") == 1
    assert value(m, "switchboard_llm_cost_usd_total", agent_kind="coordinator") == 0
    assert "unknown" in section and "$0.0000" not in section
    assert "Cost unknown for claude-sonnet-9" in section


async def test_prices_in_the_config_override_the_table(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text('[prices."claude-sonnet-9"]\ninput = 2.0\noutput = 8.0\n')
    from config.settings import load_settings

    settings = load_settings(config, {})
    price = settings.price("claude-sonnet-9-20270101")
    assert price is not None and price.cost(1_000_000, 1_000_000, 0, 0) == 10.0
    assert price.cache_read == pytest.approx(0.2) and price.cache_write == pytest.approx(2.5)


async def test_the_daily_budget_holds_new_work_tells_home_once_and_resumes_next_day(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(
        tmp_path, fake, SWITCHBOARD_DAILY_BUDGET_USD="0.000001", SWITCHBOARD_HOME="terminal",
        **PRICED,
    )  # fmt: skip
    async with running_app(settings) as app:
        channel = app.channels[0]
        app.human.accept(inbound("first", conversation="a"))
        await channel.wait_text("echo:")  # type: ignore[attr-defined]
        app.human.accept(inbound("second", conversation="b"))
        app.human.accept(inbound("third", conversation="c"))
        await channel.wait_text("daily LLM budget")  # type: ignore[attr-defined]
        await eventually(lambda: app.ops.budget.waiting == 2)
        assert len(fake.calls) == 1
        status = full_status(app.store)
        assert "EXCEEDED: new model work waits until" in status
        notices = [t for t in channel.texts() if "daily LLM budget" in t]  # type: ignore[attr-defined]
        assert len(notices) == 1 and "SWITCHBOARD_DAILY_BUDGET_USD" in notices[0]
        tomorrow = app.ops.budget.resumes_at() + 1
        app.ops.budget.clock = lambda: tomorrow
        app.ops.budget.recheck()
        await channel.wait_for(lambda sent: sum("echo:" in m.text for m in sent) == 3)  # type: ignore[attr-defined]
    assert len(events(tmp_path, "budget.exceeded")) == 1
    assert events(tmp_path, "budget.resumed")


def test_a_budget_needs_a_price_for_the_model() -> None:
    from config.settings import load_settings

    with pytest.raises(SettingsError, match=r"^SWITCHBOARD_DAILY_BUDGET_USD needs a price"):
        load_settings(None, {"SWITCHBOARD_DAILY_BUDGET_USD": "5", "SWITCHBOARD_MODEL": "x-1"})


async def test_a_port_in_use_is_one_line_naming_the_variable(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = make_settings(tmp_path / "a", fake, PORT=str(port))
        with pytest.raises(SettingsError) as info:
            async with running_app(settings):
                pass
        assert str(info.value) == f"PORT: 127.0.0.1:{port} is already in use; choose a free port."
        env = {
            **fake.env(),
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "b"),
            "SWITCHBOARD_HTTP_PORT": str(port),
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_SIGNING_SECRET": "s",
            "SLACK_API_URL": "http://127.0.0.1:9/api/",
        }
        started = time.monotonic()
        code, out = Switchboard(["run"], env, tmp_path).finish(timeout=30)
    assert code == 2 and time.monotonic() - started < 30
    assert out[-1] == (
        f"switchboard: SWITCHBOARD_HTTP_PORT: 127.0.0.1:{port} is already in use; "
        "choose a free port."
    )
    assert not any("Traceback" in line for line in out)


async def test_trigger_fires_and_their_lateness_are_counted(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    from bot.triggers import build_spec

    async with served_app(
        tmp_path, fake, SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS="0.1", SWITCHBOARD_HOME="terminal"
    ) as (app, channel, url):
        spec = build_spec("delayed", {"delay_seconds": 0.1, "action_type": "send_message"}, "hi")
        app.triggers.create(spec, "coordinator")
        await channel.wait_text("hi")
        _, text, _ = await get(f"{url}/metrics")
    m = samples(text)
    assert value(m, "switchboard_trigger_fires_total", type="delayed") == 1
    assert value(m, "switchboard_trigger_lateness_seconds_count") == 1
    assert value(m, "switchboard_trigger_lateness_seconds_sum") < 5


async def test_the_dashboard_says_when_the_budget_holds_work(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    env = {"SWITCHBOARD_DAILY_BUDGET_USD": "0.000001", "SWITCHBOARD_HOME": "terminal", **PRICED}
    async with served_app(tmp_path, fake, **env) as (app, channel, url):
        _, before, _ = await get(url + "/")
        app.human.accept(inbound("first", conversation="a"))
        await channel.wait_text("echo:")
        app.human.accept(inbound("second", conversation="b"))
        await channel.wait_text("daily LLM budget")
        _, after, _ = await get(url + "/")
        _, metrics, _ = await get(url + "/metrics")
        _, health_text, _ = await get(url + "/healthz")
    assert 'class="banner"' not in before
    assert 'class="banner"' in after and "new model work waits until" in after
    assert value(samples(metrics), "switchboard_budget_exceeded") == 1
    budget = json.loads(health_text)["budget"]
    assert budget["exceeded"] is True and budget["limit_usd"] == 0.000001
    assert budget["spent_today_usd"] > 0


async def test_status_says_the_coordinator_is_not_running_once_the_bot_stopped(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    from bot.ledger.status import runtime_live
    from bot.store.core import Store

    settings = make_settings(tmp_path, fake)
    async with running_app(settings) as app:
        await eventually(lambda: runtime_live(app.store))
        assert "coordinator  coordinator  live" in full_status(app.store)
    store = Store(settings.data_dir / "switchboard.db", readonly=True)
    try:
        text = full_status(store)
    finally:
        store.close()
    assert "coordinator  coordinator  not running" in text
    assert "leader: none" in text
