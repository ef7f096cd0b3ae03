"""What firing a trigger does: wake an agent with a task, or send a message.

The output target is the trigger's `deliver_to`, else the target of the conversation
it was created in, else SWITCHBOARD_HOME. Waking the coordinator is a `task` on the
bus in the creating conversation (so the answer lands in that thread), or in a
conversation of its own, `trigger:<id>`. A named worker that is not active is spawned
through the `spawn` callback (the core cannot import `agents`; the app wires it).

Claiming the run (`trigger_runs`) and the action's durable writes (bus mail,
outbox, a one-shot's status) happen in one transaction, so a trigger acts at most
once per fire time, across crashes too. What follows the action (the agent's model
turn, the delivery) is retried by the bus, the agent loop and the outbox.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.core.bus import Bus
from bot.core.events import EventLog
from bot.core.messages import COORDINATOR, BusMessage, Outbound, Target
from bot.core.names import TRIGGER_CONVERSATION, operator_conversation
from bot.core.notices import NO_TRIGGER_TARGET, SYSTEM_SPEAKER, trigger_failed, where_to
from bot.core.trigger_spec import ONE_SHOT
from bot.inbox.human import HumanNode
from bot.store.core import Store
from bot.store.trigger_rows import TriggerRow

log = logging.getLogger(__name__)

SCHEDULER = "scheduler"
#: spawn(name, task, conversation, target) starts a worker (wired to Team.spawn).
Spawn = Callable[[str, str, str | None, str | None], Any]


@dataclass(slots=True)
class Shot:
    """One run to act on: the trigger, its fire key, a note added to the action."""

    row: TriggerRow
    key: str
    note: str = ""


class FireError(Exception):
    """The action could not be taken (no target, worker limit...)."""


class Firing:
    def __init__(
        self,
        store: Store,
        bus: Bus,
        human: HumanNode,
        events: EventLog,
        spawn: Spawn | None,
    ) -> None:
        self.store = store
        self.table = store.triggers
        self.bus = bus
        self.human = human
        self.events = events
        self.spawn = spawn

    def target_of(self, row: TriggerRow) -> Target | None:
        return where_to(row.spec.deliver_to, row.origin_target, home=self.human.home)

    def conversation_of(self, row: TriggerRow) -> str:
        return row.conversation or f"{TRIGGER_CONVERSATION}{row.id}"

    def fire(self, row: TriggerRow, fire_key: str, note: str = "") -> bool:
        """Claim the run and act. False when this fire key was handled before."""
        return self.fire_many([Shot(row, fire_key, note)]) == 1

    def fire_many(self, shots: list[Shot]) -> int:
        """Claim and act for each shot, all in one transaction (a savepoint each, so one
        failing action does not undo the others). Returns how many acted."""
        acted: list[tuple[Shot, Target | None]] = []
        failed: list[tuple[Shot, Exception]] = []
        duplicates: list[Shot] = []
        with self.store.tx():
            for shot in shots:
                try:
                    with self.store.savepoint():
                        if self.table.claim(shot.row.id, shot.key, "fired"):
                            acted.append((shot, self._act(shot.row, shot.note)))
                            self._settle(shot.row)
                        else:
                            duplicates.append(shot)
                except Exception as exc:
                    failed.append((shot, exc))
        self._report(acted, failed, duplicates)
        return len(acted)

    def _report(
        self,
        acted: list[tuple[Shot, Target | None]],
        failed: list[tuple[Shot, Exception]],
        duplicates: list[Shot],
    ) -> None:
        for shot, target in acted:
            self.events.emit(
                "trigger.fired",
                SCHEDULER,
                trigger_id=shot.row.id,
                trigger_type=shot.row.spec.type,
                fire_key=shot.key,
                action=shot.row.spec.action_type,
                target=str(target) if target else None,
            )
        for shot in duplicates:
            self.events.emit(
                "trigger.duplicate", SCHEDULER, trigger_id=shot.row.id, fire_key=shot.key
            )
        for shot, exc in failed:
            self._failed(shot.row, shot.key, exc)

    def quiet(self, row: TriggerRow, fire_key: str, detail: str) -> None:
        """A heartbeat run that found nothing to do: recorded, nothing posted."""
        with self.store.tx():
            if self.table.claim(row.id, fire_key, "quiet", detail):
                self._settle(row)
        self.events.emit("trigger.quiet", SCHEDULER, trigger_id=row.id, fire_key=fire_key)

    def missed(self, row: TriggerRow, fire_key: str, late_by: float) -> None:
        with self.store.tx():
            if not self.table.claim(row.id, fire_key, "missed", f"late by {late_by:.0f}s"):
                return
            if row.spec.type in ONE_SHOT:
                self.table.set_status(row.id, "missed")
        self.events.emit(
            "trigger.missed",
            SCHEDULER,
            trigger_id=row.id,
            fire_key=fire_key,
            late_by=round(late_by, 3),
            policy=row.spec.missed,
        )

    # -- the actions ---------------------------------------------------------------------
    def _act(self, row: TriggerRow, note: str) -> Target | None:
        text = row.spec.action + (f"\n\n{note}" if note else "")
        target = self.target_of(row)
        if row.spec.action_type == "send_message":
            if target is None:
                raise FireError(NO_TRIGGER_TARGET)
            speaker = row.created_by if row.source == "tool" else SCHEDULER
            # tagged: the post's `message.sent` never fires this trigger again
            meta = {"trigger_id": row.id}
            self.human.say(Outbound(speaker, target, text, row.conversation, meta=meta))
        elif row.spec.agent.lower() == COORDINATOR:
            self.bus.send(self._task(COORDINATOR, row, text, target))
        else:
            self._wake_worker(row, text, target)
        return target

    def _task(
        self, recipient: str, row: TriggerRow, text: str, target: Target | None
    ) -> BusMessage:
        meta: dict[str, Any] = {"trigger_id": row.id}
        if target is not None:
            meta["reply_to"] = str(target)
        return BusMessage(
            SCHEDULER,
            recipient,
            text,
            kind="task",
            conversation=self.conversation_of(row),
            meta=meta,
        )

    def _wake_worker(self, row: TriggerRow, text: str, target: Target | None) -> None:
        worker_id = row.spec.agent.lower()
        if worker_id in self.human.directory.workers:
            if not self._may_wake(row, worker_id):
                raise FireError(f"worker {row.spec.agent} works for another conversation")
            self.bus.send(self._task(worker_id, row, text, target))
            return
        if self.spawn is None:
            raise FireError(f"worker {row.spec.agent} is not active and cannot be started here")
        self.spawn(row.spec.agent, text, row.conversation, str(target) if target else None)

    def _may_wake(self, row: TriggerRow, worker_id: str) -> bool:
        """A trigger wakes its own conversation's workers (the operator's, any)."""
        if row.source == "config" or operator_conversation(row.conversation):
            return True
        origin = self.human.directory.origins.get(worker_id)
        return origin is not None and origin.conversation == row.conversation

    def _settle(self, row: TriggerRow) -> None:
        row.last_fired_at = time.time()
        if row.spec.type in ONE_SHOT:
            row.status = "fired"
        self.table.mark_run(row)

    def _failed(self, row: TriggerRow, fire_key: str, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, FireError) else str(exc)
        log.warning("trigger %s failed: %s", row.id, error)
        with self.store.tx():
            self.table.claim(row.id, fire_key, "failed", error)
            if row.spec.type in ONE_SHOT:
                self.table.set_status(row.id, "failed")
        self.events.emit(
            "trigger.failed", SCHEDULER, trigger_id=row.id, fire_key=fire_key, error=error
        )
        target = self.target_of(row)
        if target is not None:
            text = trigger_failed(row.id, row.spec.describe(), error)
            self.human.say(Outbound(SYSTEM_SPEAKER, target, text, row.conversation, kind="notice"))
