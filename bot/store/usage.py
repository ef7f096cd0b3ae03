"""The store's LLM usage table: one row per model call, with its estimated cost.

Part of the store (the only code that speaks SQL): `Store.usage` is one of these, on
the store's connection. `cost_usd` is NULL when the model had no price: such calls
count as "unknown", never as zero dollars.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.errors import MissingTable
from bot.store.sql import Sql


@dataclass(slots=True)
class UsageRow:
    at: float
    agent: str
    kind: str
    conversation: str | None
    model: str
    outcome: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    seconds: float


@dataclass(slots=True)
class UsageTotals:
    """Sums over some calls; `cost_usd` covers the priced ones, `unpriced` counts the rest."""

    agent: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


_SUMS = (
    "COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),"
    " COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0),"
    " COALESCE(SUM(cost_usd), 0.0),"  # 0.0: a float on both backends when nothing is priced
    " COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), 0)"
)


class UsageRows:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def record(self, row: UsageRow) -> None:
        self.sql.execute(
            "INSERT INTO llm_usage (at, agent, kind, conversation, model, outcome, input_tokens,"
            " output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, seconds)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.at,
                row.agent,
                row.kind,
                row.conversation,
                row.model,
                row.outcome,
                row.input_tokens,
                row.output_tokens,
                row.cache_read_tokens,
                row.cache_write_tokens,
                row.cost_usd,
                row.seconds,
            ),
        )

    def by_agent(self, since: float) -> list[UsageTotals]:
        """Per agent, the calls since `since` (epoch seconds), costliest first."""
        try:
            rows = self.sql.execute(
                f"SELECT agent, {_SUMS} FROM llm_usage WHERE at >= ?"
                " GROUP BY agent ORDER BY 7 DESC, 1",
                (since,),
            ).fetchall()
        except MissingTable:  # a data dir from before usage was recorded
            return []
        return [UsageTotals(*row) for row in rows]

    def total(self, since: float) -> UsageTotals:
        try:
            row = self.sql.execute(
                f"SELECT 'all', {_SUMS} FROM llm_usage WHERE at >= ?", (since,)
            ).fetchone()
        except MissingTable:
            return UsageTotals("all")
        return UsageTotals(*row)

    def unpriced_models(self, since: float) -> list[str]:
        try:
            rows = self.sql.execute(
                "SELECT DISTINCT model FROM llm_usage WHERE at >= ? AND cost_usd IS NULL"
                " AND outcome = 'ok'",
                (since,),
            ).fetchall()
        except MissingTable:
            return []
        return [r[0] for r in rows]
