"""Nothing stalls unseen: reminders for what waits on people, reports of stuck workers.

Every CHECK_SECONDS, or a tenth of a shorter remind or stuck setting (and whenever
a test calls `check(now)` with its own clock):

- An open question, or a tool call waiting for approval, is reminded in its own
  thread SWITCHBOARD_REMIND_AFTER after it was asked (default 4 h), then daily; once
  it has waited a day it is also escalated, once, to SWITCHBOARD_HOME (when that is
  another place). A reminder of a question is a question again (a reply to it, in
  email too, answers the worker); a reminder of an approval carries the approval's
  id (a reply decides it). What was sent is kept in the store (`stalled:` keys), so a
  restart neither repeats nor forgets a reminder.
- A running worker with no progress (no tool call, no model answer) for
  SWITCHBOARD_STUCK_AFTER (default 15 min), model retries included, is reported
  once to where it reports, saying what it was doing; a `worker.stuck` event lets a
  heartbeat see it. It is reported again only after it made progress and stuck anew.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from bot.core import notices
from bot.core.events import Event
from bot.core.messages import Outbound, Target
from bot.core.model_calls import CallRecord
from bot.core.notices import SYSTEM_SPEAKER, where_to
from bot.ops.desk import OpsView

CHECK_SECONDS = 30.0
MIN_CHECK_SECONDS = 0.2
DAY = 86400.0
KEY = "stalled:"
PROGRESS = ("tool.called", "worker.spawned", "worker.resumed")


@dataclass(slots=True)
class Progress:
    """What a worker did last, and since when its model calls fail."""

    at: float
    doing: str = "starting"
    retrying_since: float | None = None
    error: str = ""
    reported: bool = False


@dataclass(slots=True)
class Reminded:
    count: int = 0
    last: float = 0.0
    escalated: bool = False


class Stalled:
    def __init__(self, view: OpsView) -> None:
        self.settings = view.settings
        self.store = view.store
        self.events = view.events
        self.inbox = view.inbox
        self.say = view.acts.say
        #: agent id -> when it last moved; bounded: at each check only the running
        #: workers' stay (every worker ever spawned would otherwise keep one)
        self.progress: dict[str, Progress] = {}
        self.started = time.time()
        self.unsubscribe = view.events.subscribe(self.observe)

    # -- progress ------------------------------------------------------------------------
    def observe(self, event: Event) -> None:
        if event.type in PROGRESS and event.agent_id:
            doing = f"it last called {event.data['tool']}" if event.data.get("tool") else ""
            self._moved(event.agent_id, event.ts, doing or "it had just started")

    def on_call(self, record: CallRecord) -> None:
        agent = record.label.agent
        if record.label.kind != "worker" or not agent:
            return
        if record.outcome == "ok":
            self._moved(agent, time.time(), "it was thinking (its last model call answered)")
            return
        seen = self.progress.setdefault(agent, Progress(time.time()))
        seen.retrying_since = seen.retrying_since or time.time()
        seen.error = record.error[:200]

    def _moved(self, agent: str, at: float, doing: str) -> None:
        self.progress[agent] = Progress(at, doing)

    # -- the check -----------------------------------------------------------------------
    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval())
            self.check(time.time())

    def interval(self) -> float:
        """CHECK_SECONDS, or a tenth of a shorter setting (a 2 s reminder is not 30 s late)."""
        shortest = min(self.settings.remind_after, self.settings.stuck_after)
        return max(MIN_CHECK_SECONDS, min(CHECK_SECONDS, shortest / 10))

    def check(self, now: float) -> None:
        self._questions(now)
        self._approvals(now)
        self._stuck(now)

    def _questions(self, now: float) -> None:
        directory = self.inbox.directory
        open_ids = set()
        for q in list(directory.questions.values()):
            open_ids.add(q.id)
            name = directory.workers.get(q.worker, q.worker)
            target = Target.parse(q.target)
            remind = Outbound(name, target, notices.question_reminder(q.question, now - q.asked_at),
                              q.conversation, kind="question", question_id=q.id)  # fmt: skip
            escalate = notices.question_escalation(name, q.target, q.question, now - q.asked_at)
            self._due(f"q:{q.id}", q.asked_at, now, remind, escalate, question_id=q.id)
        self._forget("q:", open_ids)

    def _approvals(self, now: float) -> None:
        open_ids = set()
        for row in list(self.inbox.approvals.pending.values()):
            open_ids.add(row.id)
            waited = now - row.requested_at
            meta = {"approval_id": row.id}
            remind = Outbound(SYSTEM_SPEAKER, Target.parse(row.target),
                              notices.approval_reminder(row.tool, row.speaker, waited),
                              row.conversation, kind="notice", meta=meta)  # fmt: skip
            escalate = notices.approval_escalation(row.tool, row.speaker, row.target, waited)
            self._due(f"a:{row.id}", row.requested_at, now, remind, escalate, meta=meta)
        self._forget("a:", open_ids)

    def _due(
        self, key: str, asked: float, now: float, remind: Outbound, escalate: str, **extra: Any
    ) -> None:
        """Remind after REMIND_AFTER, then daily; escalate once after a day."""
        state = self._state(key)
        first = asked + self.settings.remind_after
        due = first if state.count == 0 else state.last + DAY
        sent = False
        if now >= due:
            self.say(remind)
            state.count, state.last, sent = state.count + 1, now, True
        home = self.inbox.home
        if now - asked >= DAY and not state.escalated:
            state.escalated = sent = True
            if home is not None and str(home) != str(remind.target):
                self.say(Outbound(
                    remind.agent, home, escalate, None, kind=remind.kind,
                    question_id=extra.get("question_id"), meta=dict(extra.get("meta", {})),
                ))  # fmt: skip
        if sent:
            self.store.set_kv(KEY + key, json.dumps([state.count, state.last, state.escalated]))
            self.events.emit("stalled.reminded", SYSTEM_SPEAKER, item=key, count=state.count,
                             escalated=state.escalated)  # fmt: skip

    def _state(self, key: str) -> Reminded:
        raw = self.store.get_kv(KEY + key)
        if raw is None:
            return Reminded()
        count, last, escalated = json.loads(raw)
        return Reminded(int(count), float(last), bool(escalated))

    def _forget(self, prefix: str, open_ids: set[str]) -> None:
        for rest in self.store.kv_prefixed(KEY + prefix):
            if rest not in open_ids:
                self.store.delete_kv(KEY + prefix + rest)

    # -- stuck workers -------------------------------------------------------------------
    def _stuck(self, now: float) -> None:
        running = self.store.agents.workers(("running",))
        ids = {row.id for row in running}
        self.progress = {agent: seen for agent, seen in self.progress.items() if agent in ids}
        for row in running:
            seen = self.progress.setdefault(row.id, Progress(max(self.started, row.updated_at)))
            idle = now - seen.at
            if seen.reported or idle < self.settings.stuck_after:
                continue
            seen.reported = True
            doing = seen.doing
            if seen.retrying_since is not None:
                retried = notices.in_words(now - seen.retrying_since)
                doing = f"its model calls have failed for {retried} ({seen.error})"
            text = notices.worker_stuck(row.name, idle, f"{doing}; its task: {row.task[:200]}")
            target = where_to(row.origin_target, home=self.inbox.home)
            if target is not None:
                self.say(Outbound(SYSTEM_SPEAKER, target, text, row.origin_conversation,
                                  kind="notice"))  # fmt: skip
            self.events.emit("worker.stuck", row.id, name=row.name, idle_seconds=round(idle),
                             doing=doing)  # fmt: skip
