"""The dashboard's charts: LLM cost and calls per hour for the last day, answer
latency p50/p95 per hour, messages per channel.

Calls, cost and messages come from the store, aggregated per hour in SQL; a past
hour does not change, so its sums are kept (`HourlySums`) and a page asks the store
only about the hours it has not seen and the current one. Answer latency is
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

from bot.core.events import Event, EventLog
from bot.ops import svg
from bot.ops.html import Markup, section

if TYPE_CHECKING:
    from bot.ops.desk import OpsView
    from bot.store.views import StoreViews

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


class HourlySums:
    """Per-hour sums from the store, each finished hour read once."""

    def __init__(self) -> None:
        self.usage: dict[int, tuple[int, float]] = {}
        self.inbound: dict[int, dict[str, int]] = {}
        self._done_until = 0  # every hour before this one is in the caches

    def read(self, views: StoreViews, first_hour: int, current_hour: int) -> None:
        start = max(first_hour, self._done_until)
        if start < current_hour:  # finished hours not read yet
            self._keep(views, start, current_hour)
            self._done_until = current_hour
        self._keep(views, current_hour, current_hour + 1)  # the hour under way, again
        for old in [h for h in self.usage if h < first_hour]:
            del self.usage[old]
        for old in [h for h in self.inbound if h < first_hour]:
            del self.inbound[old]

    def _keep(self, views: StoreViews, first: int, end: int) -> None:
        usage = views.usage_per_hour(first * 3600.0, end * 3600.0)
        inbound = views.inbound_per_hour(first * 3600.0, end * 3600.0)
        for hour in range(first, end):
            self.usage[hour] = usage.get(hour, (0, 0.0))
            self.inbound[hour] = {}
        for (hour, channel), n in inbound.items():
            self.inbound[hour][channel] = n


def charts(
    view: OpsView, latency: AnswerLatency, sums: HourlySums, now: float | None = None
) -> Markup:
    now = time.time() if now is None else now
    current = int(now // 3600)
    first_hour = current - HOURS + 1
    sums.read(view.store.views, first_hour, current)
    hours = range(first_hour, current + 1)
    labels = [_hour_label(view, hour * 3600) for hour in hours]
    calls = [float(sums.usage[h][0]) for h in hours]
    cost = [sums.usage[h][1] for h in hours]
    p50, p95 = latency.percentiles(first_hour)
    per_channel: dict[str, int] = {}
    for hour in hours:
        for channel, n in sums.inbound[hour].items():
            per_channel[channel] = per_channel.get(channel, 0) + n
    channels = sorted(per_channel)
    zone = view.ledger.zone.key
    body = Markup("").join(
        [
            svg.bars(f"LLM calls per hour (last 24 h, {zone})", labels, calls),
            svg.bars(f"LLM cost per hour, USD (priced calls, {zone})", labels, cost, "$"),
            svg.lines(
                f"Answer latency per hour, seconds (p50, p95; {zone})",
                labels,
                [("p50", p50), ("p95", p95)],
                " s",
            ),
            svg.bars(
                "Messages per channel (last 24 h)",
                channels,
                [float(per_channel[c]) for c in channels],
            ),
        ]
    )
    return section("Charts", Markup(f'<div class="charts">{body}</div>'), "charts")


def _hour_label(view: OpsView, ts: float) -> str:
    return datetime.fromtimestamp(ts, view.ledger.zone).strftime("%H:00")
