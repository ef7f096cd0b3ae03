"""LLM usage and cost: every model call recorded with its agent, conversation and model.

The ledger prices a call from the settings' price table (config/prices.py) and writes
one row to the store (`Store.usage`). A model without a price is recorded with an
unknown cost (NULL), so totals say "unknown" instead of a reassuring zero. "Today"
is the calendar day in SWITCHBOARD_TIMEZONE; the zone is kept in the store so that
`switchboard status` reads today's figures from the data dir alone.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.core.readout import table
from bot.store.core import Store
from bot.store.usage import UsageRow, UsageTotals
from config.settings import Settings

ZONE_KEY = "usage.timezone"
BUDGET_KEY = "budget"


@dataclass(frozen=True, slots=True)
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


def day_start(zone: ZoneInfo, now: float) -> float:
    """Epoch seconds of the midnight that began the day `now` falls in."""
    local = datetime.fromtimestamp(now, zone)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def next_day(zone: ZoneInfo, now: float) -> float:
    local = datetime.fromtimestamp(day_start(zone, now), zone)
    # + 26 h then back to midnight: right across a DST change too
    return day_start(zone, (local + timedelta(hours=26)).timestamp())


class Ledger:
    """Records usage and knows what today has cost so far."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.zone = ZoneInfo(settings.timezone)
        self._day = 0.0
        self.spent_today = 0.0
        if not store.readonly:
            store.set_kv(ZONE_KEY, settings.timezone)

    def record(
        self,
        agent: str,
        kind: str,
        conversation: str | None,
        model: str,
        outcome: str,
        tokens: Tokens,
        seconds: float,
    ) -> float | None:
        """Write one call; its cost in dollars, None when the model has no price."""
        price = self.settings.price(model)
        cost = None
        if outcome != "ok":
            cost = 0.0  # a failed call bills no tokens
        elif price is not None:
            cost = price.cost(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write)
        now = time.time()
        self.today(now)  # before the insert: a new day reloads the total from the store
        row = UsageRow(
            now, agent, kind, conversation, model, outcome, tokens.input,
            tokens.output, tokens.cache_read, tokens.cache_write, cost, seconds,
        )  # fmt: skip
        self.store.usage.record(row)
        self.spent_today += cost or 0.0
        return cost

    @property
    def day(self) -> float:
        """Epoch seconds of the midnight that began the day `spent_today` is for."""
        return self._day

    def today(self, now: float | None = None) -> float:
        """Today's priced spend, reloaded from the store when the day turned."""
        now = time.time() if now is None else now
        start = day_start(self.zone, now)
        if start != self._day:
            self._day = start
            self.spent_today = self.store.usage.total(start).cost_usd
        return self.spent_today


def usage_section(store: Store) -> str:
    """`switchboard status`: today's tokens and cost, per agent, and the budget."""
    zone = ZoneInfo(store.get_kv(ZONE_KEY) or "UTC")
    start = day_start(zone, time.time())
    day = datetime.fromtimestamp(start, zone).strftime("%Y-%m-%d")
    per_agent = store.usage.by_agent(start)
    head = f"LLM usage today ({day}, {zone.key})"
    if not per_agent:
        return f"{head}: no model calls" + budget_line(store)
    total = store.usage.total(start)
    rows = [_usage_row(t) for t in [*per_agent, total]]
    headers = ["agent", "calls", "input", "output", "cache read", "cache write", "cost"]
    unknown = store.usage.unpriced_models(start)
    note = ""
    if unknown:
        names = ", ".join(unknown)
        note = f'\nCost unknown for {names}: no price (add [prices."<model>"] to the config).'
    return f"{head}\n" + table(headers, rows) + note + budget_line(store)


def _usage_row(t: UsageTotals) -> list[object]:
    return [
        t.agent, t.calls, t.input_tokens, t.output_tokens, t.cache_read_tokens,
        t.cache_write_tokens, cost_text(t),
    ]  # fmt: skip


def cost_text(t: UsageTotals) -> str:
    """`$0.0123`, `unknown`, or `$0.0123 + unknown (2 calls)` when only some were priced."""
    if t.unpriced and t.cost_usd == 0 and t.unpriced == t.calls:
        return "unknown"
    dollars = f"${t.cost_usd:.4f}"
    return dollars + (f" + unknown ({t.unpriced} calls)" if t.unpriced else "")


def budget_line(store: Store) -> str:
    raw = store.get_kv(BUDGET_KEY)
    if not raw:
        return ""
    state = json.loads(raw)
    line = f"\nDaily budget: ${state['limit']:.2f}, spent ${state['spent']:.4f}"
    if state.get("exceeded") and time.time() >= state.get("resumes_at", float("inf")):
        line += f" (exceeded on the day before {state['resumes']}; a new day has begun)"
    elif state.get("exceeded"):
        line += (
            f" -- EXCEEDED: new model work waits until {state['resumes']} "
            "(or until SWITCHBOARD_DAILY_BUDGET_USD is raised and Switchboard restarted)"
        )
    return line
