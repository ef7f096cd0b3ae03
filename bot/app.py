"""The composition root: builds the core, the agents and the configured channels,
restores state from the data dir, and runs them until stopped.

With `bot/parts.py` (the parts made from the settings alone), this is where `bot/`
wires `agents` and `channels` in. A channel module is imported only when that channel
is enabled, so an SDK loads only when it is used. Every channel package exposes
`build(settings, ctx) -> Channel`, `ctx` being the narrow `ChannelContext` (not the
human node).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from agents.loop.marking import untrusted
from agents.mcp import install_mcp
from agents.memory import install_memory
from agents.services import Services
from agents.team.coordinator import Coordinator
from agents.team.stop import Stopper
from agents.team.team import Team
from agents.tools.approvals import Approvals
from agents.tools.egress import Guards
from agents.tools.files import file_tools
from agents.tools.read_channel import read_channel_tools
from agents.tools.scope_guard import listing_filter
from agents.tools.toolbox import ToolError
from agents.tools.triggers import trigger_tools
from agents.tools.web_fetch import WebFetch
from bot.channel_context import ChannelContext
from bot.core.bus import Bus
from bot.core.channel import Channel
from bot.core.events import EventLog
from bot.core.lazy import connected, preload, settle_heap, settled
from bot.core.messages import Target
from bot.core.progress import Progress
from bot.core.tasks import cancel_all
from bot.inbox.files import FileStore
from bot.inbox.human import HumanNode
from bot.inbox.people import People
from bot.inbox.scope import Scope
from bot.leadership import Node
from bot.ledger.audit import AuditLog
from bot.ledger.budget import Budget
from bot.ledger.usage import Ledger
from bot.operating import operator
from bot.parts import egress_policy, fetch_limits, limits, provider
from bot.store import growth
from bot.store.core import Store, StoreError
from bot.store.space import DiskWatch
from bot.triggers.engine import TriggerEngine
from config.settings import Settings

log = logging.getLogger(__name__)

CHANNEL_MODULES = {
    "terminal": "channels.terminal",
    "slack": "channels.slack",
    "discord": "channels.discord",
    "email": "channels.email",
}
RUNTIME_KEY = "runtime"
RUNTIME_BEAT_SECONDS = 2.0
WARM_AFTER_SECONDS = 3.0  # the longest a preload waits for the connections

#: Code run on a built app before it starts (tests add tools and triggers with it).
Extension = Callable[["App"], Any]


def configured_channels(settings: Settings) -> list[str]:
    return [
        name
        for name, on in (
            ("slack", settings.slack_enabled),
            ("discord", settings.discord_enabled),
            ("email", settings.email_enabled),
        )
        if on
    ]


class App:
    def __init__(
        self, settings: Settings, channels: list[str], extensions: list[Extension] | None = None
    ) -> None:
        self.settings = settings
        self.channel_names = channels
        self.extensions = extensions or []
        self.channels: list[Channel] = []
        self._running: list[Channel] = []
        #: this process runs the agents (bot/leadership.py: at once on SQLite)
        self.leading = False
        self._tasks: list[asyncio.Task[Any]] = []
        self._warm_modules: list[str] = []  # a channel module's WARM
        self.started_at = time.time()
        self._built = False
        #: `switchboard run` serves HTTP when a port is set; the chat does not
        self.serve_http = True

    def add_channel(self, channel: Channel) -> None:
        self.channels.append(channel)
        self.human.outbox.add_channel(channel)
        surface = getattr(channel, "progress", None)  # shows work under way (bot/core/progress.py)
        if surface is not None:
            self.human.progress.add(channel.kind, surface)

    def build(self) -> None:
        """Build every part complete, bottom up: the core, the agents, their tools, then
        the channels and the operator surface."""
        if self._built:
            return
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self._build_core()
        self._build_ledger()
        self._build_agents()
        self._build_tools()
        self._build_edges()
        self._built = True

    def _build_core(self) -> None:
        """The event log, the store, the bus and the human node."""
        s = self.settings
        self.events = EventLog(s.data_dir / "events.jsonl", s.events_max_bytes, s.events_keep)
        # a full disk: new work waits
        self.store = Store(s.database, report=self._corrupt_row, space=DiskWatch(s.data_dir))
        AuditLog(self.store).attach(self.events)  # before anything can emit
        self.bus = Bus(self.store)
        self.human = HumanNode(
            self.store,
            self.bus,
            self.events,
            Target.parse(s.home) if s.home else None,
            retry_base=s.outbox_retry_base_seconds,
            files=FileStore(s.data_dir, s.file_max_bytes),
            people=People(s.people, self.store, s.timezone),
            progress=Progress(streaming=s.streaming == "on", reactions=s.ack_reactions == "on"),
            approvers=s.approvers,
            fence=self._fence,
        )

    def _build_ledger(self) -> None:
        """Usage and cost of every model call, and the daily budget that holds new model
        work once spent (the gate every call waits at: open while no budget is set)."""
        s = self.settings
        self.ledger = Ledger(s, self.store)
        self.budget = Budget(
            s.daily_budget_usd, self.ledger, self.human, self.events, warn_at=s.budget_warn_at
        )

    def apply(self, settings: Settings) -> None:
        """Settings re-read while running (SIGHUP): a new daily budget and price table.
        A raised budget lets waiting model work go on at once."""
        self.ledger.settings = settings
        self.budget.limit = settings.daily_budget_usd
        self.budget.save()
        self.budget.recheck()
        log.info("settings reloaded: daily budget %s", settings.daily_budget_usd)

    def _build_agents(self) -> None:
        """The model, the agents' services, memory, the team and the scheduler."""
        s = self.settings
        self.llm = provider(s, self.budget.wait)
        self.scope = self._scope()
        self.services = Services(
            self.store, self.bus, self.events, self.human, self.llm, s.data_dir, limits(s),
            guard_for=Guards(self.scope, egress_policy(s)),
        )  # fmt: skip
        self.memory = install_memory(self.services, s)
        self.team = Team(self.services)
        self.coordinator = Coordinator(self.services, self.team)
        self.bus.catchers.append(Stopper(self.coordinator, self.team))  # a person's `stop`
        self.triggers = TriggerEngine(
            s, self.store, self.events, self.human, self.bus,
            spawn=self.team.spawn, generation=self._generation,
        )  # fmt: skip

    def _build_tools(self) -> None:
        """The agents' tools, the internal jobs, MCP and the approvals of gated calls."""
        s, services = self.settings, self.services
        visible = listing_filter(services, self.scope)
        services.tool_factories.append(trigger_tools(self.triggers))
        services.tool_factories.append(file_tools(s.data_dir, s.file_max_bytes, visible))
        services.tool_factories.append(read_channel_tools(services))
        if s.web_fetch == "on":
            services.tool_factories.append(WebFetch(fetch_limits(s)).tools)
        self._add_jobs()
        self.mcp = install_mcp(services, s)
        via = Target.parse(s.approval_via) if s.approval_via else None
        # the approvals and the MCP registry name each other (a gated call asks, an approved
        # one runs on the registry): the gate closes that circle once both exist
        services.approvals = Approvals(services, self.mcp, via, s.approval_timeout_seconds)
        self.mcp.gate = services.approvals.gate

    def _add_jobs(self) -> None:
        """The scheduler's internal jobs: distilling memory, consolidating, pruning."""
        s = self.settings
        if s.memory_distil:  # off: the job is not registered, and start-up removes it
            self.triggers.add_internal(
                "memory-distil", s.memory_distil_cron, self.memory.distil_all
            )
        if s.consolidate and self.memory.consolidator is not None:
            self.triggers.add_internal(
                "team-consolidate", s.consolidate_cron, self.memory.consolidator.run
            )
        self.pruner = growth.pruner(self.store, s)  # retention: docs/running-for-months.md
        self.triggers.add_internal("store-prune", s.prune_cron, self.pruner.run)

    def _build_edges(self) -> None:
        """The extensions, the configured channels, the operator surface and the node."""
        for extension in self.extensions:
            extension(self)
        for name in self.channel_names:
            module = importlib.import_module(CHANNEL_MODULES[name])
            self.add_channel(module.build(self.settings, ChannelContext(self.human)))
            self._warm_modules.extend(getattr(module, "WARM", ()))
        self.node = Node(self)
        self.ops = operator(self)  # its view, the API's channel, every model call recorded

    async def start(self) -> None:
        """Serve, then lead at once (SQLite) or run as a follower until this node leads
        (PostgreSQL, bot/leadership.py)."""
        self.build()
        if self.serve_http and self.settings.serves_http:
            await self.ops.serve()  # first: a port in use stops the start, nothing else ran
        await self.ops.start()
        for channel in self.channels:
            if self.node.runs(channel.kind):
                await self._start_channel(channel)
        await self.node.start()
        if not self.leading:  # a follower loads the model's SDK now, not at its failover
            self._spawn(self._warm(), "warm-model")

    async def _start_channel(self, channel: Channel) -> None:
        if channel not in self._running:
            self._running.append(channel)
            await channel.start()

    async def lead(self) -> None:
        """What only the leader runs: the agents, the scheduler, the outbox, and the
        channels not yet started, after restoring what the store holds."""
        restored = self.team.restore()
        redelivered = self.bus.restore()
        self.team.redirect(self.bus.orphans())
        rerouted = self.human.restore()
        if self.human.intake is not None:
            rerouted += self.human.intake.resume()
        self.events.emit(
            "agent.started",
            "coordinator",
            workers=restored,
            mail=redelivered,
            inbound=rerouted,
            pid=os.getpid(),
        )
        settle_heap()  # what the start built, out of the collector's sight
        self.leading = True
        self.triggers.start()
        self.mcp.start()
        self.ops.lead()
        self._spawn(self.coordinator.run(), "coordinator")
        self._spawn(self.human.outbox.run(), "outbox")
        self._spawn(self._beat(), "runtime-beat")
        for channel in self.channels:
            await self._start_channel(channel)
        self._spawn(self._warm(), "warm-model")

    async def _warm(self) -> None:
        """Load in a thread, once the channels connected (one GIL: not beside them), what
        a first answer needs: the model's SDK (~1 s of CPU), a channel module's WARM."""
        with contextlib.suppress(TimeoutError):  # a channel that cannot connect: load anyway
            await asyncio.wait_for(connected(self._running), WARM_AFTER_SECONDS)
        try:
            await self.llm.warm()
            for name in self._warm_modules:
                await preload(name)
        finally:
            settled()  # the collector as usual from now on (bot/core/lazy.py)

    async def stop_worker(self, name: str) -> str:
        """An operator stops a worker (the dashboard); LookupError says why none was."""
        try:
            return await self.team.stop(name)
        except ToolError as exc:
            raise LookupError(str(exc)) from exc

    def spawn_on_data(
        self, name: str, task: str, data: str, source: str, conversation: str, target: str
    ) -> None:
        """A worker whose task carries data nobody vouches for (a hook's payload), marked
        as untrusted (agents/loop/marking.py)."""
        self.team.spawn(name, f"{task}\n\n{untrusted(data, source)}", conversation, target)

    def _fence(self) -> None:
        """Raises when this node may no longer send (it lost its lease)."""
        self.node.check()

    def _generation(self) -> int | None:
        """The lease generation this node leads with (None: it does not lead)."""
        lease = self.node.lease
        return lease.generation if lease is not None else None

    def _scope(self) -> Scope:
        """The scope policy: every target the settings name is open (bot/inbox/scope.py)."""
        s = self.settings
        named = [s.home, *(x.deliver_to for x in s.schedules)]
        if s.heartbeat is not None:
            named.append(s.heartbeat.deliver_to)
        open_targets = [*s.targets, *(t for t in named if t)]
        return Scope(
            self.human.people,
            self.human.file_owners,
            self.human.outbox.channels,
            self.events,
            open_targets=open_targets,
            readable=s.targets,
            mode=s.cross_scope,
        )

    def _corrupt_row(self, problem: str) -> None:
        self.events.emit("store.corrupt", "", problem=problem)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        task.add_done_callback(_report_death)
        self._tasks.append(task)

    async def _beat(self) -> None:
        """Write what `switchboard status` shows about the live process."""
        while True:
            self.store.set_kv(
                RUNTIME_KEY,
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "node": self.node.id,
                        "started_at": self.started_at,
                        "beat": self.store.now(),  # read by `status` on any node
                        "llm_in_flight": self.llm.in_flight,
                        "llm_waiting": self.llm.waiting,
                        "sessions": len(self.coordinator.sessions),
                        "model_down": self.llm.outage.reason,  # why the model cannot be used
                    }
                ),
            )
            await asyncio.sleep(RUNTIME_BEAT_SECONDS)

    async def stop(self) -> None:
        await self.node.stop()
        try:
            self.triggers.stop()
        except StoreError:
            if self.node.lost is None:
                raise
            log.warning("the scheduler stopped unsaved: %s", self.node.lost)
        await self.human.outbox.stop()  # deliveries under way finish while channels are up
        if self.human.intake is not None:
            await self.human.intake.stop()  # journaled as fetching: resumed at the next start
        for channel in self._running:
            try:
                await channel.stop()
            except Exception:
                log.exception("stopping channel %s failed", channel.kind)
        await self.ops.stop()
        await self.coordinator.shutdown()
        await self.team.shutdown()
        await self.mcp.stop()
        await cancel_all(self._tasks)
        with contextlib.suppress(StoreError):  # a store gone: under a minute of it lost
            self.human.people.last.flush()  # when each person last spoke, exactly
        if self.leading:
            self.store.set_kv(RUNTIME_KEY, json.dumps({"pid": None, "stopped_at": time.time()}))
        self.node.release()  # only now: nothing of this node acts any more
        await self.llm.close()
        self.memory.close()
        self.events.close()
        self.store.close()


def _report_death(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.critical("core task %s died", task.get_name(), exc_info=task.exception())
