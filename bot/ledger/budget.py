"""The daily budget (SWITCHBOARD_DAILY_BUDGET_USD): once today's estimated spend passes
it, new model work waits; at SWITCHBOARD_BUDGET_WARN_AT of it (80%), the home target is
told once a day what will wait (the schedules due before the day turns).

`wait()` is the LLM provider's gate: every model call awaits it first. Over budget,
the home target is told once per day, the state is written for the dashboard and
`switchboard status`, and calls wait until the next day begins in
SWITCHBOARD_TIMEZONE (or the budget is raised: restart with the higher value, and the
waiting work resumes from the data dir). A call already under way finishes, so the
day can end a little over the budget: the cap is on starting work, not on the bill.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime

from bot.core.events import EventLog
from bot.core.messages import Outbound
from bot.core.notices import SYSTEM_SPEAKER, budget_nearly_spent, budget_spent
from bot.inbox.human import HumanNode
from bot.ledger.usage import BUDGET_KEY, Ledger, next_day
from bot.store.trigger_rows import job_id_of

log = logging.getLogger(__name__)

#: how often a waiting call looks again (the clock may be changed under it in tests)
RECHECK_SECONDS = 30.0


class Budget:
    def __init__(
        self,
        limit: float | None,
        ledger: Ledger,
        human: HumanNode,
        events: EventLog,
        clock: Callable[[], float] = time.time,
        warn_at: float = 0.8,
    ) -> None:
        self.limit = limit
        self.warn_at = warn_at
        self.ledger = ledger
        self.human = human
        self.events = events
        self.clock = clock
        saved = json.loads(human.store.get_kv(BUDGET_KEY) or "{}")
        self._told_day = float(saved.get("told_day", 0.0))  # told once a day, restarts too
        self._warned_day = float(saved.get("warned_day", 0.0))
        self._recheck = asyncio.Event()
        self.waiting = 0

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.ledger.today(self.clock()) >= self.limit

    def resumes_at(self) -> float:
        return next_day(self.ledger.zone, self.clock())

    async def wait(self) -> None:
        """Return when new model work may start."""
        if not self.exceeded:
            self._warn()
            return
        self._announce()
        self.waiting += 1
        try:
            while self.exceeded:
                self._recheck.clear()
                left = max(0.05, self.resumes_at() - self.clock())
                try:
                    await asyncio.wait_for(self._recheck.wait(), min(left, RECHECK_SECONDS))
                except TimeoutError:
                    pass
        finally:
            self.waiting -= 1
        self.events.emit("budget.resumed", SYSTEM_SPEAKER, spent=round(self.ledger.today(), 6))
        self.save()

    def recheck(self) -> None:
        """Look again now (after the clock or the limit changed)."""
        self._recheck.set()

    def save(self) -> None:
        """The state `switchboard status` and the dashboard show."""
        if self.limit is None:  # no cap (any more): nothing to show
            self.human.store.delete_kv(BUDGET_KEY)
            return
        resumes = datetime.fromtimestamp(self.resumes_at(), self.ledger.zone)
        state = {
            "limit": self.limit,
            "spent": round(self.ledger.today(self.clock()), 6),
            "exceeded": self.exceeded,
            "resumes": resumes.strftime("%Y-%m-%d %H:%M %Z"),
            "resumes_at": resumes.timestamp(),
            "waiting": self.waiting,
            "updated_at": self.clock(),
            "told_day": self._told_day,
            "warned_day": self._warned_day,
        }
        self.human.store.set_kv(BUDGET_KEY, json.dumps(state))

    def _announce(self) -> None:
        day = self.ledger.day
        if self._told_day == day:
            self.save()
            return
        self._told_day = day
        self.save()
        spent = self.ledger.today(self.clock())
        resumes = datetime.fromtimestamp(self.resumes_at(), self.ledger.zone)
        assert self.limit is not None
        text = budget_spent(self.limit, spent, resumes.strftime("%Y-%m-%d %H:%M %Z"))
        log.warning(text)
        self.events.emit("budget.exceeded", SYSTEM_SPEAKER, limit=self.limit, spent=spent)
        if self.human.home is not None:
            self.human.say(Outbound(SYSTEM_SPEAKER, self.human.home, text, kind="notice"))

    def _warn(self) -> None:
        """Once a day, at `warn_at` of the budget: what will wait once it is reached."""
        if self.limit is None or self._warned_day == self.ledger.day:
            return
        spent = self.ledger.today(self.clock())
        if spent < self.warn_at * self.limit:
            return
        self._warned_day = self.ledger.day
        self.save()
        resumes_at = self.resumes_at()
        resumes = datetime.fromtimestamp(resumes_at, self.ledger.zone).strftime("%Y-%m-%d %H:%M %Z")
        text = budget_nearly_spent(self.limit, spent, resumes, self._due_before(resumes_at))
        log.warning(text)
        share = round(spent / self.limit, 3)
        self.events.emit(
            "budget.warning", SYSTEM_SPEAKER, limit=self.limit, spent=spent, share=share
        )
        if self.human.home is not None:
            self.human.say(Outbound(SYSTEM_SPEAKER, self.human.home, text, kind="notice"))

    def _due_before(self, when: float) -> list[str]:
        """The actions of the schedules that fire before `when`, soonest first."""
        store = self.human.store
        next_at = store.triggers.next_run_times()
        due = []
        for row in store.triggers.active():
            at = next_at.get(job_id_of(row.id))
            if at is not None and at < when:
                due.append((at, row.spec.action))
        return [_short(action) for _, action in sorted(due)]


def _short(action: str) -> str:
    first = action.strip().splitlines()[0] if action.strip() else "a schedule"
    return f"'{first[:57]}...'" if len(first) > 60 else f"'{first}'"
