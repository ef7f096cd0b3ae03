"""The team: spawning, stopping, listing and restoring workers.

Each worker is an asyncio task. An exception inside one is caught here and never
touches another worker or the coordinator. One that may pass (PASSING: the model or
the database unreachable, a timeout, a lost connection) restarts the worker from its
stored conversation after a backoff, at most RECOVERIES times, and its thread is told;
any other, or the last, is reported to the coordinator and the person, and the worker
has failed. Limits: `max_workers` active at once (running or parked).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace

from agents.model.llm import ModelUnavailable
from agents.services import Services
from agents.team import publishing
from agents.team.asked import Asker, WorkerPeople
from agents.team.worker import TASK_KEY, Worker
from agents.tools.toolbox import ToolError
from bot.core.bus import Mail
from bot.core.messages import BROADCAST, COORDINATOR, HUMAN, Outbound
from bot.core.names import operator_conversation
from bot.core.notices import SYSTEM_SPEAKER, where_to, worker_failed, worker_recovering
from bot.core.tasks import cancel_all
from bot.inbox.places import Origin
from bot.outbox.sender import backoff
from bot.store.core import ACTIVE_WORKER_STATES, WorkerRow, WorkerStatus
from bot.store.errors import StoreUnavailable

log = logging.getLogger(__name__)

#: failures that may pass by themselves: the worker goes on from its stored conversation
PASSING = (ModelUnavailable, StoreUnavailable, TimeoutError, ConnectionError)
#: how many times a worker goes on after one, in this process
RECOVERIES = 3
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
RESERVED = {COORDINATOR, HUMAN, BROADCAST, "all", "everyone", SYSTEM_SPEAKER, "person", "user"}


class NotYours(ToolError):
    """A worker of another conversation: not this one's to stop or steer."""


class Team:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.workers: dict[str, Worker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def spawn(
        self,
        name: str,
        task: str,
        origin_conversation: str | None,
        origin_target: str | None,
        asked_by: Asker | None = None,
    ) -> Worker:
        """`asked_by`: (person, platform id) of who asked for the task; by default the
        person who spoke last in the origin conversation (a trigger firing there)."""
        worker_id = name.lower()
        if not _NAME.match(name) or worker_id in RESERVED:
            raise ToolError(
                f"{name!r} is not a usable worker name: use a short name of letters, "
                "digits, - or _ (like Alice), not coordinator/human/all"
            )
        person = self.services.human.people.named(name)
        if person is not None:
            raise ToolError(
                f"{name!r} is the name of a person of the team ({person.name}); a worker "
                "needs a name no person has, so @-mentions stay clear: pick another"
            )
        if worker_id in self.workers:
            raise ToolError(
                f"a worker called {self.workers[worker_id].row.name} is already "
                "active; pick another name or stop it first"
            )
        if len(self.workers) >= self.services.limits.max_workers:
            raise ToolError(
                f"the limit of {self.services.limits.max_workers} active workers "
                "(SWITCHBOARD_MAX_WORKERS) is reached; stop one or wait"
            )
        row = WorkerRow(
            id=worker_id,
            name=name,
            task=task,
            status="running",
            origin_conversation=origin_conversation,
            origin_target=origin_target,
        )
        people = self.services.human.people
        if asked_by is None and (speaker := people.speaker_of(origin_conversation)) is not None:
            asked_by = (speaker.name, people.speaker_id_of(origin_conversation))
        with self.services.store.tx():
            self.services.store.upsert_worker(row)
            # a new task under a name used before starts afresh, not in the old talk
            self.services.store.save_conversation(worker_id, TASK_KEY, [], origin_target)
            WorkerPeople.start(asked_by, people).save(self.services.store, worker_id)
        worker = self._start(row)  # first: its origin is known when its events are read
        self.services.events.emit("worker.spawned", worker_id, name=name, task=task[:500])
        return worker

    def restore(self) -> int:
        rows = self.services.store.workers(ACTIVE_WORKER_STATES)
        for row in rows:
            self._start(row)
        return len(rows)

    def _start(self, row: WorkerRow) -> Worker:
        worker = Worker(self.services, row, on_finished=self.finished)
        self.workers[row.id] = worker
        owners = worker.role.people.owners(self.services.human.people)
        origin = Origin(row.origin_conversation, row.origin_target, owners)
        self.services.human.worker_started(row.id, row.name, origin)
        self._tasks[row.id] = asyncio.create_task(self._guard(worker), name=f"worker:{row.id}")
        return worker

    async def _guard(self, worker: Worker) -> None:
        for attempt in range(RECOVERIES + 1):
            try:
                await worker.run()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not isinstance(exc, PASSING) or attempt == RECOVERIES:
                    log.exception("worker %s failed", worker.row.id)
                    self._crashed(worker, exc)
                    return
                log.warning("worker %s: %s; going on (try %d)", worker.row.id, exc, attempt + 1)
                await asyncio.sleep(self._recovering(worker, exc, attempt))
                worker = self._again(worker)

    def _recovering(self, worker: Worker, exc: Exception, attempt: int) -> float:
        """Tell the worker's thread it goes on; how long it waits first."""
        limits = self.services.limits
        wait = backoff(attempt + 1, limits.llm_retry_base, limits.llm_retry_max)
        row = worker.row
        text = worker_recovering(row.name, exc, wait, RECOVERIES - attempt - 1)
        target = where_to(row.origin_target, home=self.services.home)
        if target is not None:
            with self.services.store.tx():
                self.services.human.say(
                    Outbound(SYSTEM_SPEAKER, target, text, row.origin_conversation, kind="notice")
                )
        self.services.events.emit("worker.recovering", row.id, error=str(exc), attempt=attempt + 1)
        return wait

    def _again(self, worker: Worker) -> Worker:
        """The same worker from its stored row and conversation (its last checkpoint)."""
        stored = self.services.store.workers(ACTIVE_WORKER_STATES)
        row = next((r for r in stored if r.id == worker.row.id), worker.row)
        again = Worker(self.services, row, on_finished=self.finished)
        self.workers[row.id] = again
        return again

    def _crashed(self, worker: Worker, exc: Exception) -> None:
        row = worker.row
        text = worker_failed(row.name, exc)
        row.status, row.error = "failed", text
        target = where_to(row.origin_target, home=self.services.home)
        with self.services.store.tx():
            self.services.store.upsert_worker(row)
            # shown below (when it has a place): not to be said again
            self.services.bus.send(publishing.notice(row, text, shown=target is not None))
            if target is not None:
                self.services.human.say(
                    Outbound(SYSTEM_SPEAKER, target, text, row.origin_conversation, kind="notice")
                )
        self.services.events.emit("worker.failed", row.id, error=text)
        self._forget(row.id)

    def finished(self, worker: Worker, status: WorkerStatus) -> None:
        self.services.events.emit("worker.stopped", worker.row.id, status=status)
        self._forget(worker.row.id)

    async def stop(self, name: str) -> str:
        worker = self.workers.get(name.lower())
        if worker is None:
            raise ToolError(f"no active worker called {name!r}")
        task = self._tasks.get(worker.row.id)
        if task is not None:
            await cancel_all([task])
        worker.row.status = "stopped"
        self.services.store.upsert_worker(worker.row)
        self.services.events.emit("worker.stopped", worker.row.id, status="stopped")
        self._forget(worker.row.id)
        return f"Worker {worker.row.name} stopped."

    def _forget(self, worker_id: str) -> None:
        self.workers.pop(worker_id, None)
        self._tasks.pop(worker_id, None)
        self.services.human.worker_gone(worker_id)
        self.redirect(self.services.bus.unregister(worker_id))

    def redirect(self, leftovers: list[Mail]) -> None:
        """Mail for a worker that is gone: a person's message goes to the coordinator
        (nothing a person said is lost); agents' mail to it is dropped, as an event."""
        if not leftovers:
            return
        services = self.services
        with services.store.tx():
            services.store.consume_mail([m.id for m in leftovers])
            for mail in leftovers:
                msg = mail.msg
                if msg.sender == HUMAN:
                    text = f"(sent to {msg.recipient}, who is no longer active) {msg.text}"
                    services.bus.send(
                        replace(
                            msg, recipient=COORDINATOR, text=text, kind="human", question_id=None
                        )
                    )
                services.events.emit(
                    "mail.redirected",
                    msg.recipient,
                    sender=msg.sender,
                    to=COORDINATOR if msg.sender == HUMAN else None,
                )

    def of(self, conversation: str | None) -> list[Worker]:
        """The active workers spawned from `conversation` (the operator's own work, a
        config trigger's turn or `home`, has every worker)."""
        every = operator_conversation(conversation)
        return [
            w for w in self.workers.values()
            if every or w.row.origin_conversation == conversation
        ]  # fmt: skip

    def describe(self, conversation: str | None) -> str:
        """This conversation's workers; the others only counted (docs/security.md)."""
        mine = self.of(conversation)
        others = len(self.workers) - len(mine)
        more = f"\n({others} more work for other conversations.)" if others else ""
        if not mine:
            return "No active workers." + more
        lines = [f"- {w.row.name} ({w.row.status}, {w.row.turns} turns): {w.row.task[:120]}"
                 for w in mine]  # fmt: skip
        return "\n".join(lines) + more

    def stop_for(self, name: str, conversation: str | None) -> Worker:
        """The worker `name` if `conversation` may stop it, else a ToolError saying why."""
        worker = self.workers.get(name.lower())
        if worker is None:
            raise ToolError(f"no active worker called {name!r}")
        if worker not in self.of(conversation):
            raise NotYours(
                f"{worker.row.name} works for another conversation: only that conversation "
                "or an operator (the dashboard) may stop it"
            )
        return worker

    async def shutdown(self) -> None:
        await cancel_all(list(self._tasks.values()))
