"""The composition root's side of the operator surface: the view `bot/ops/` is handed
(bot/ops/desk.py), and the wiring ops does not do itself: the API's own channel on the
outbox, the hook desk told of deliveries, every model call recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.ops.api import ApiChannel
from bot.ops.desk import Acts, OpsView
from bot.ops.operator import Operator
from bot.store.core import WorkerRow
from bot.triggers.engine import TriggerEngine

if TYPE_CHECKING:
    from agents.team.team import Team
    from bot.app import App


def operator(app: App) -> Operator:
    """The operator surface of a built app, wired in."""
    ops = Operator(ops_view(app))
    if ops.api is not None:  # the API's conversations are answered into the outbox
        app.human.outbox.add_channel(ApiChannel())
    if ops.hooks is not None:  # a group's first post gives it its thread
        app.human.outbox.observers.append(ops.hooks.desk.delivered)
    app.llm.observers.append(ops.on_call)  # usage, cost, metrics, health
    return ops


def ops_view(app: App) -> OpsView:
    """What ops reads of a built app, and its acts."""
    return OpsView(
        settings=app.settings, store=app.store, events=app.events, ledger=app.ledger,
        budget=app.budget, inbox=app.human, channels=app.channels,
        outbox_kinds=app.human.outbox.channels, node=app.node, model=app.llm, acts=acts(app),
        started_at=app.started_at, live_workers=lambda: _rows(app.team),
        sessions=lambda: len(app.coordinator.sessions), leading=lambda: app.leading,
        scheduling=_scheduling(app.triggers),
    )  # fmt: skip


def acts(app: App) -> Acts:
    """Every change ops makes outside its own rows, each bound to the part that makes it."""
    human = app.human
    return Acts(
        say=human.say,
        take_in=human.accept,
        send=app.bus.send,
        answering=human.answering.add,
        decide=human.approvals.decide,
        stop_worker=app.stop_worker,
        end_progress=human.progress.end,
        cancel_trigger=_cancel(app.triggers),
        spawn_on_data=app.spawn_on_data,
    )


def _rows(team: Team) -> dict[str, WorkerRow]:
    return {key: worker.row for key, worker in team.workers.items()}


def _scheduling(engine: TriggerEngine) -> Callable[[], bool]:
    def running() -> bool:
        scheduler = engine.scheduler
        return scheduler is not None and scheduler.running

    return running


def _cancel(engine: TriggerEngine) -> Callable[[str], bool]:
    def cancel(trigger_id: str) -> bool:
        return engine.cancel(trigger_id) is not None or engine.cancel_paused(trigger_id) is not None

    return cancel
