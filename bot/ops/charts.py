"""The dashboard's charts: LLM cost and calls per hour for the last day, answer
latency p50/p95 per hour, messages per channel.

Calls, cost and messages come from the store (aggregated in SQL). Answer latency is
measured here from the event log: a person's message (`message.received`, by the
place it is answered in) to the first reply delivered there (`message.sent`, kind
`reply`); the samples of each hour are kept (at most SAMPLES_PER_HOUR of them, a
uniform reservoir) for the last day, in memory: after a restart the chart starts
afresh.
"""

from __future__ import annotations

import math
import random
import time
from datetime import datetime
from typing import TYPE_CHECKING

from bot.events import Event, EventLog
from bot.ops import svg
from bot.ops.html import Markup, section

if TYPE_CHECKING:
    from bot.app import App

HOURS = 24
SAMPLES_PER_HOUR = 2000
MAX_WAITING = 10_000


class AnswerLatency:
    """Seconds from a person's message to the first reply in its place, per hour."""

    def __init__(self, events: EventLog) -> None:
        self._waiting: dict[str, float] = {}  # place -> when its oldest unanswered came
        self._hours: dict[int, tuple[int, list[float]]] = {}  # hour -> (seen, reservoir)
        self.unsubscribe = events.subscribe(self.observe)

    def observe(self, event: Event) -> None:
        data = event.data
        if event.type == "message.received" and data.get("reply_to") and data.get("to"):
            place = str(data["reply_to"])
            if place not in self._waiting and len(self._waiting) < MAX_WAITING:
                self._waiting[place] = event.ts
        elif event.type == "message.sent" and data.get("kind") == "reply":
            since = self._waiting.pop(str(data.get("target")), None)
            if since is not None:
                self.add(event.ts, event.ts - since)

    def add(self, at: float, seconds: float) -> None:
        hour = int(at // 3600)
        seen, samples = self._hours.get(hour, (0, []))
        seen += 1
        if len(samples) < SAMPLES_PER_HOUR:
            samples.append(seconds)
        else:
            slot = random.randrange(seen)
            if slot < SAMPLES_PER_HOUR:
                samples[slot] = seconds
        self._hours[hour] = (seen, samples)
        for old in [h for h in self._hours if h <= hour - HOURS]:
            del self._hours[old]

    def percentiles(self, first_hour: int) -> tuple[list[float], list[float]]:
        """(p50s, p95s) of the HOURS hours from `first_hour`; NaN where none."""
        p50, p95 = [], []
        for hour in range(first_hour, first_hour + HOURS):
            samples = sorted(self._hours.get(hour, (0, []))[1])
            p50.append(_quantile(samples, 0.5))
            p95.append(_quantile(samples, 0.95))
        return p50, p95


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def charts(app: App, latency: AnswerLatency, now: float | None = None) -> Markup:
    now = time.time() if now is None else now
    first_hour = int(now // 3600) - HOURS + 1
    since = first_hour * 3600.0
    labels = [_hour_label(app, (first_hour + i) * 3600) for i in range(HOURS)]
    usage = app.store.views.usage_per_hour(since)
    calls = [float(usage.get(i, (0, 0.0))[0]) for i in range(HOURS)]
    cost = [usage.get(i, (0, 0.0))[1] for i in range(HOURS)]
    p50, p95 = latency.percentiles(first_hour)
    per_channel = sorted(app.store.views.inbound_per_channel(since).items())
    body = Markup("").join(
        [
            svg.bars("LLM calls per hour (last 24 h)", labels, calls),
            svg.bars("LLM cost per hour, USD (priced calls)", labels, cost, " $"),
            svg.lines(
                "Answer latency per hour, seconds", labels, [("p50", p50), ("p95", p95)], " s"
            ),
            svg.bars(
                "Messages per channel (last 24 h)",
                [c for c, _ in per_channel],
                [float(n) for _, n in per_channel],
            ),
        ]
    )
    return section("Charts", Markup(f'<div class="charts">{body}</div>'), "charts")


def _hour_label(app: App, ts: float) -> str:
    return datetime.fromtimestamp(ts, app.ops.ledger.zone).strftime("%H:00")
