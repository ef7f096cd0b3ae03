"""The dashboard's charts: server-rendered SVG of LLM calls and cost per hour, answer
latency p50/p95 per hour and messages per channel, under the unchanged CSP."""

from __future__ import annotations

import math
import re
from pathlib import Path

from bot.core.events import Event, EventLog
from bot.ops.charts import HOURS, AnswerLatency
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import inbound
from tests.kits.ops_kit import get, served_app

PRICED = {"SWITCHBOARD_MODEL": "claude-sonnet-5"}


async def test_the_overview_draws_four_charts_from_real_traffic(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    async with served_app(tmp_path, fake, **PRICED) as (app, channel, url):
        for n in range(3):
            app.human.accept(inbound(f"hello {n}"))
            await channel.wait_count(n + 1)
        status, html, headers = await get(url + "/")
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    charts = html[html.index('id="charts"') :]
    assert charts.count("<svg") == 4
    for caption in ("LLM calls per hour", "LLM cost per hour", "Answer latency", "per channel"):
        assert caption in charts
    assert re.search(r"<title>[^<]*: 3</title></rect>", charts)  # 3 calls this hour
    assert "<title>terminal: 3</title>" in charts  # messages per channel
    assert re.search(r'<polyline points="[0-9.]+,[0-9.]+"', charts)  # a latency point
    assert "style=" not in charts and "<script" not in charts


def test_latency_is_measured_from_a_message_to_the_first_reply_in_its_place() -> None:
    log = EventLog(None)
    latency = AnswerLatency(log)
    hour = 500_000
    base = hour * 3600.0
    asked = {"reply_to": "slack:C1/1", "to": ["coordinator"]}
    reply = {"target": "slack:C1/1", "kind": "reply"}
    for i in range(100):
        at = base + i * 30
        latency.observe(Event("message.received", "human", asked, at))
        latency.observe(Event("message.sent", "coordinator", reply, at + 1 + i % 10))
        latency.observe(Event("message.sent", "coordinator", reply, at + 20))
    p50, p95 = latency.percentiles(hour - HOURS + 1)
    assert p50[-1] == 6 and p95[-1] == 10  # the first reply counts, the second does not
    assert all(math.isnan(v) for v in p50[:-1])
    latency.add(base + 30 * 3600, 1.0)  # a day later: the old hour is gone
    assert hour not in latency._hours
