"""Prometheus metrics for `/metrics`, on a registry of our own (not the global one).

Counters are fed in place from the event log (one subscriber, a dict lookup and an
`inc()` per event) and from the LLM provider's call records: nothing on the hot path
touches the database. Gauges (outbox depth, workers, open questions, channels,
event-loop lag, ...) are read when Prometheus scrapes, by a custom collector, so
they cost nothing between scrapes. Other parts add scrape-time gauges with `gauge()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.core.events import Event

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LLM_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
LATE_BUCKETS = (0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600)
LAG_INTERVAL = 0.25
TOKEN_TYPES = ("input", "output", "cache_read", "cache_write")

#: event type -> the result label it counts under
INBOUND = {"message.received": "accepted", "message.duplicate": "duplicate",
           "message.refused": "refused"}  # fmt: skip
OUTBOUND = {"message.sent": "sent", "outbox.retry": "retry", "outbox.failed": "failed"}


@dataclass(frozen=True, slots=True)
class ScrapeGauge:
    name: str
    doc: str
    read: Callable[[], float | dict[tuple[str, ...], float]]
    labels: tuple[str, ...] = ()


class Metrics:
    """The registry and the counters; `observe_event` and `observe_call` feed them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        count = self._counter
        self.inbound = count("inbound_messages", "Messages from people", "channel", "result")
        self.outbound = count("outbound_messages", "Deliveries to people", "channel", "result")
        self.routing = count("routing_decisions", "Where people's messages went", "decision")
        self.llm_calls = count("llm_calls", "Model calls", "agent_kind", "outcome")
        self.tokens = count("llm_tokens", "Tokens (input, output, cache_*)", "agent_kind", "type")
        self.cost = count("llm_cost_usd", "Estimated cost of priced model calls", "agent_kind")
        self.failovers = count("llm_failovers", "Turns moved to a fallback model", "model")
        self.unpriced = count("llm_unpriced_calls", "Calls of a model with no price", "model")
        self.fires = count("trigger_fires", "Trigger runs that acted", "type")
        self.missed = count("trigger_missed", "Trigger runs missed beyond their grace time")
        self.llm_seconds = Histogram(
            "switchboard_llm_call_duration_seconds",
            "Model call latency",
            ["agent_kind"],
            buckets=LLM_BUCKETS,
            registry=self.registry,
        )
        self.lateness = Histogram(
            "switchboard_trigger_lateness_seconds",
            "How late a trigger run acted after its fire time",
            buckets=LATE_BUCKETS,
            registry=self.registry,
        )
        self._children: dict[tuple[Any, ...], Any] = {}
        self._gauges = _Gauges()
        self.registry.register(self._gauges)
        self.lag = LoopLag()
        self.gauge(
            "switchboard_event_loop_lag_seconds",
            "Worst event-loop delay since the previous scrape",
            self.lag.take,
        )

    def _counter(self, name: str, doc: str, *labels: str) -> Counter:
        return Counter(f"switchboard_{name}", doc, list(labels), registry=self.registry)

    def gauge(
        self,
        name: str,
        doc: str,
        read: Callable[[], float | dict[tuple[str, ...], float]],
        labels: tuple[str, ...] = (),
    ) -> None:
        """A gauge read at scrape time: `read` returns a value, or values by label tuple."""
        self._gauges.items.append(ScrapeGauge(name, doc, read, labels))

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- feeding ------------------------------------------------------------------------
    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_event(self, event: Event) -> None:
        """The event-log subscriber: counts what the runtime reports."""
        kind = event.type
        data = event.data
        if kind in INBOUND:
            self._child(self.inbound, str(data.get("channel", "")), INBOUND[kind]).inc()
            if kind == "message.received":
                self._child(self.routing, _decision(data)).inc()
        elif kind in OUTBOUND:
            channel = str(data.get("target", "")).split(":", 1)[0]
            self._child(self.outbound, channel, OUTBOUND[kind]).inc()
        elif kind == "trigger.fired":
            self._child(self.fires, str(data.get("trigger_type", ""))).inc()
            late = _lateness(data.get("fire_key"), event.ts)
            if late is not None:
                self.lateness.observe(late)
        elif kind == "trigger.missed":
            self.missed.inc()
        elif kind == "llm.failover":
            self._child(self.failovers, str(data.get("model", ""))).inc()

    def observe_call(
        self,
        kind: str,
        model: str,
        outcome: str,
        seconds: float,
        tokens: tuple[int, int, int, int],
        cost: float | None,
    ) -> None:
        """One model call: outcome, latency, tokens and cost."""
        self._child(self.llm_calls, kind, outcome).inc()
        self._child(self.llm_seconds, kind).observe(seconds)
        for name, count in zip(
            ("input", "output", "cache_read", "cache_write"), tokens, strict=True
        ):
            if count:
                self._child(self.tokens, kind, name).inc(count)
        if cost is not None:
            self._child(self.cost, kind).inc(cost)
        elif outcome == "ok":
            self._child(self.unpriced, model).inc()


def _decision(data: dict[str, Any]) -> str:
    """coordinator | worker | broadcast | answer | unknown_worker, from message.received."""
    if data.get("error"):
        return "unknown_worker"
    if data.get("question"):
        return "answer"
    recipients = data.get("to") or []
    if len(recipients) > 1:
        return "broadcast"
    return "coordinator" if recipients == ["coordinator"] else "worker"


def _lateness(fire_key: Any, ts: float) -> float | None:
    try:
        return max(0.0, ts - float(fire_key))
    except (TypeError, ValueError):
        return None


class _Gauges(Collector):
    """Scrape-time gauges."""

    def __init__(self) -> None:
        self.items: list[ScrapeGauge] = []

    def collect(self) -> Iterator[Metric]:
        for item in self.items:
            family = GaugeMetricFamily(item.name, item.doc, labels=list(item.labels) or None)
            value = item.read()
            if isinstance(value, dict):
                for labels, v in value.items():
                    family.add_metric(list(labels), v)
            else:
                family.add_metric([], value)
            yield family


class LoopLag:
    """How late the event loop wakes a task that asked to sleep `LAG_INTERVAL`: the
    worst delay since the last scrape (a blocked loop delays every ack and reply)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.last = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(LAG_INTERVAL)
            self.last = max(0.0, loop.time() - start - LAG_INTERVAL)
            self.worst = max(self.worst, self.last)

    def take(self) -> float:
        worst, self.worst = self.worst, self.last
        return worst


SPEND_MARKS = (b"_cost", b"budget")


def without_spend(text: bytes) -> bytes:
    """The scrape without spend (cost and budget series): for a reader without the token."""
    lines = text.splitlines(keepends=True)
    return b"".join(line for line in lines if not any(m in line for m in SPEND_MARKS))
