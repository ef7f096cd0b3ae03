"""The warning before the daily budget is reached: once a day, at
SWITCHBOARD_BUDGET_WARN_AT of it, to the home target, naming what will wait."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

from bot.ledger.budget import Budget
from bot.store.trigger_rows import job_id_of
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import events, inbound, make_settings, running_app


async def test_the_home_target_is_warned_once_before_the_budget_is_spent(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(
        tmp_path, fake, SWITCHBOARD_MODEL="claude-sonnet-5", SWITCHBOARD_DAILY_BUDGET_USD="1000",
        SWITCHBOARD_BUDGET_WARN_AT="0.0000001", SWITCHBOARD_HOME="terminal",
    )  # fmt: skip
    async with running_app(settings) as app:
        channel = app.channels[0]
        for i, conversation in enumerate("abc"):
            app.human.accept(inbound(f"message {i}", conversation=conversation))
            await channel.wait_for(  # type: ignore[attr-defined]
                lambda sent, n=i + 1: sum("echo:" in m.text for m in sent) == n
            )
        warned = [t for t in channel.texts() if "daily budget" in t]  # type: ignore[attr-defined]
        assert len(warned) == 1, warned
        assert "SWITCHBOARD_DAILY_BUDGET_USD" in warned[0] and "waits until" in warned[0]
        assert len(fake.calls) == 3  # a warning holds nothing
    assert len(events(tmp_path, "budget.warning")) == 1


class _Store:
    def __init__(self, rows: list[Any], next_at: dict[str, float]) -> None:
        self.kv: dict[str, str] = {}
        self.triggers = SimpleNamespace(active=lambda: rows, next_run_times=lambda: next_at)

    def get_kv(self, key: str) -> str | None:
        return self.kv.get(key)

    def set_kv(self, key: str, value: str) -> None:
        self.kv[key] = value


def _budget(spent: float, rows: list[Any], next_at: dict[str, float]) -> tuple[Budget, list[str]]:
    said: list[str] = []
    ledger = SimpleNamespace(today=lambda now=None: spent, day=1.0, zone=ZoneInfo("UTC"))
    human = SimpleNamespace(
        store=_Store(rows, next_at), home="terminal", say=lambda m: said.append(m.text)
    )
    emitted = SimpleNamespace(emit=lambda *a, **k: None)
    clock = time.time
    return Budget(10.0, ledger, human, emitted, clock, warn_at=0.8), said  # type: ignore[arg-type]


def _row(trigger_id: str, action: str) -> Any:
    return SimpleNamespace(id=trigger_id, spec=SimpleNamespace(action=action))


async def test_the_warning_names_the_schedules_due_before_the_day_turns() -> None:
    soon, later = time.time() + 60, time.time() + 7 * 86400
    rows = [_row("t1", "Summarise #ops"), _row("t2", "Weekly report"), _row("t3", "Standup")]
    next_at = {job_id_of("t1"): soon + 5, job_id_of("t2"): later, job_id_of("t3"): soon}
    budget, said = _budget(8.5, rows, next_at)
    await budget.wait()
    await budget.wait()
    assert len(said) == 1
    assert "'Standup', 'Summarise #ops'" in said[0] and "Weekly report" not in said[0]
    assert "$8.50, 85% of the $10.00 daily budget" in said[0]


async def test_below_the_share_nothing_is_said() -> None:
    budget, said = _budget(7.9, [], {})
    await budget.wait()
    assert said == []  # the home target hears nothing yet
