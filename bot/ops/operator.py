"""The operator surface of a built app, from the view the composition root hands it
(bot/ops/desk.py; bot/operating.py wires it in).

Always on: recording every model call into the ledger and the metrics (the ledger and
the daily budget are the composition root's, handed in), the metrics counters. Served
over HTTP only by `switchboard run` when a port is set (or Slack's HTTP Events mode needs
one), on SWITCHBOARD_HTTP_HOST (default 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from bot.core.model_calls import CallRecord
from bot.core.tasks import cancel_all
from bot.ledger.usage import Tokens
from bot.ops import growth_view
from bot.ops.actions import Actions
from bot.ops.api import Api
from bot.ops.auth import Access
from bot.ops.charts import AnswerLatency, HourlySums
from bot.ops.dashboard import Dashboard, Figures
from bot.ops.desk import OpsView
from bot.ops.health import LLMHealth, health, public_health
from bot.ops.hooks import HookMetrics, Hooks
from bot.ops.hooks_desk import HookDesk
from bot.ops.live import LiveEvents
from bot.ops.metrics import CONTENT_TYPE, Metrics, without_spend
from bot.ops.probe import probe_channels
from bot.ops.server import HttpServer, Route
from bot.ops.stalled import Stalled
from bot.store.core import ACTIVE_WORKER_STATES
from config.callers import api_callers, api_targets

log = logging.getLogger(__name__)


class Operator:
    def __init__(self, view: OpsView) -> None:
        s = view.settings
        self.view = view
        self.metrics = Metrics()
        self.llm_health = LLMHealth()
        #: built by the composition root: usage and the daily budget do not depend on ops
        self.ledger = view.ledger
        self.budget = view.budget
        self.live = LiveEvents(view.events)
        self.latency = AnswerLatency(view.events)
        self.sums = HourlySums()
        self.stalled = Stalled(view)
        token = s.dashboard_token.get_secret_value().strip() if s.dashboard_token else None
        self.access = Access(token, host=s.http_host, port=s.listen_port, secure=s.cookie_secure)
        self.unsubscribe_metrics = view.events.subscribe(self.metrics.observe_event)
        self._scrape_gauges()
        self.server: HttpServer | None = None
        self.api: Api | None = None
        if s.api_token is not None:
            self.api = Api(
                view, api_callers(s.api_token.get_secret_value()), api_targets(s.api_targets)
            )
        self.hooks: Hooks | None = None
        if s.hooks:  # POST /hooks/<name> (bot/ops/hooks.py)
            hook_metrics = HookMetrics(self.metrics.registry)
            self.hooks = Hooks(view, HookDesk(view, hook_metrics), hook_metrics)
        self._tasks: list[asyncio.Task[None]] = []

    # -- model calls -------------------------------------------------------------------
    def on_call(self, record: CallRecord) -> None:
        u = record.usage
        tokens = Tokens(
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens,
            u.cache_creation_input_tokens,
        )
        label = record.label
        cost = self.ledger.record(
            label.agent, label.kind, label.conversation, record.model, record.outcome, tokens,
            record.seconds,
        )  # fmt: skip
        self.metrics.observe_call(
            label.kind, record.model, record.outcome, record.seconds,
            (tokens.input, tokens.output, tokens.cache_read, tokens.cache_write), cost,
        )  # fmt: skip
        self.llm_health.record(record.outcome, record.error)
        self.stalled.on_call(record)
        if self.budget.limit is not None:
            self.budget.save()

    # -- scrape-time gauges ------------------------------------------------------------
    def _scrape_gauges(self) -> None:
        view, gauge = self.view, self.metrics.gauge
        views = view.store.views
        self.growth = growth_view.install(
            view.store, view.settings.data_dir, self.metrics
        )  # data dir, database, WAL
        gauge("switchboard_outbox_pending", "Deliveries waiting", lambda: views.outbox_pending()[0])
        gauge(
            "switchboard_outbox_oldest_pending_age_seconds",
            "Age of the oldest waiting delivery (0: none)",
            self._oldest_pending_age,
        )
        gauge("switchboard_workers", "Workers by state", self._workers_by_state, ("state",))
        gauge(
            "switchboard_open_questions",
            "Questions agents asked people that wait for an answer",
            lambda: len(view.inbox.directory.questions),
        )
        gauge(
            "switchboard_channel_up",
            "1 when the channel is connected",
            self._channels_up,
            ("channel",),
        )
        gauge("switchboard_llm_in_flight", "Model calls under way", lambda: view.model.in_flight)
        gauge(
            "switchboard_llm_waiting", "Model calls waiting for a slot", lambda: view.model.waiting
        )
        gauge(
            "switchboard_llm_cost_today_usd",
            "Estimated spend today (priced calls)",
            self.ledger.today,
        )
        gauge(
            "switchboard_budget_exceeded",
            "1 while the daily budget holds new model work",
            lambda: float(self.budget.exceeded),
        )
        gauge(
            "switchboard_pending_approvals",
            "Tool calls waiting for a person's approval",
            lambda: len(view.store.approvals.pending()),
        )
        gauge(
            "switchboard_leader",
            "1 when this node leads (runs the agents), 0 when it follows",
            lambda: {(view.node.id,): float(view.node.role == "leader")},
            ("node",),
        )
        gauge(
            "switchboard_leader_since_seconds",
            "Unix time the leading node took the lead (0: none leads)",
            lambda: view.node.leader().since or 0.0,
        )

    def _oldest_pending_age(self) -> float:
        _count, oldest = self.view.store.views.outbox_pending()
        return max(0.0, time.time() - oldest) if oldest else 0.0

    def _workers_by_state(self) -> dict[tuple[str, ...], float]:
        counts = self.view.store.views.worker_counts()
        return {(state,): float(counts.get(state, 0)) for state in ACTIVE_WORKER_STATES}

    def _channels_up(self) -> dict[tuple[str, ...], float]:
        states = {c: s for c, s, _d, _t in self.view.store.health()}
        return {(c.kind,): float(states.get(c.kind) == "connected") for c in self.view.channels}

    # -- HTTP --------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        figures = Figures(self.growth, self.latency, self.sums, self.hooks)
        dashboard = Dashboard(self.view, self.access, self.live, figures)
        return [
            ("GET", "/healthz", self._healthz),
            ("GET", "/metrics", self._metrics),
            *dashboard.routes(),
            *Actions(self.view, self.access, dashboard.flashes).routes(),
            *(self.api.routes() if self.api is not None else []),
            *(self.hooks.routes() if self.hooks is not None else []),
        ]

    async def serve(self) -> None:
        """Start the HTTP server with ours and the channels' routes (raises SettingsError
        naming the port's variable when it cannot listen)."""
        s = self.view.settings
        server = HttpServer(s.http_host, s.listen_port, s.port_variable)
        server.add(self.routes())
        for channel in self.view.channels:
            server.add(list(channel.http_routes))
        await server.start()
        self.server = server

    async def start(self) -> None:
        """What every node runs."""
        self._tasks.append(asyncio.create_task(self.metrics.lag.run(), name="loop-lag"))
        self._tasks.append(asyncio.create_task(probe_channels(self.view), name="channel-probe"))

    def lead(self) -> None:
        """What the leader alone runs: reminders of stalled work, the budget's record."""
        self._tasks.append(asyncio.create_task(self.stalled.run(), name="stalled-work"))
        if self.hooks is not None:
            self._tasks.append(asyncio.create_task(self.hooks.desk.run(), name="hook-desk"))
        self.budget.save()

    async def stop(self) -> None:
        self.live.close()
        if self.server is not None:
            await self.server.stop()
            self.server = None
        await cancel_all(self._tasks)

    def _audience(self, request: web.Request) -> str:
        """`full` for a token holder (or the loopback Host without a token), `public`
        for anyone else, `refused` when SWITCHBOARD_METRICS_PUBLIC=false asks for one."""
        if self.access.allowed(request):
            return "full"
        if not self.access.open and not self.view.settings.metrics_public:
            return "refused"
        return "public"

    async def _healthz(self, request: web.Request) -> web.Response:
        audience = self._audience(request)
        if audience == "refused":
            return _token_required()
        status, body = health(self.view, self.llm_health)
        if audience == "public":
            body = public_health(body)
        elif self.hooks is not None:
            body["hooks"] = self.hooks.desk.last
        return web.json_response(body, status=status, headers={"Cache-Control": "no-store"})

    async def _metrics(self, request: web.Request) -> web.Response:
        audience = self._audience(request)
        if audience == "refused":
            return _token_required()
        body = self.metrics.render()
        if audience == "public":
            body = without_spend(body)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


def _token_required() -> web.Response:
    return web.Response(
        status=401, text="401: SWITCHBOARD_DASHBOARD_TOKEN required",
        headers={"WWW-Authenticate": 'Bearer realm="switchboard"', "Cache-Control": "no-store"},
    )  # fmt: skip
