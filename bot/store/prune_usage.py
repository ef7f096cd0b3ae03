"""Retention of usage detail (bot/store/prune.py): one row per model call rolled up into its
day's sums (`usage_daily`) and deleted, in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.store.sql import Sql

_USAGE = (
    "SELECT id, at, agent, kind, model, outcome, input_tokens, output_tokens,"
    " cache_read_tokens, cache_write_tokens, cost_usd, seconds FROM llm_usage"
    " WHERE at < ? ORDER BY id LIMIT ?"
)
_ADD_DAY = (
    "INSERT INTO usage_daily (day, agent, kind, model, outcome, calls, input_tokens,"
    " output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, unpriced, seconds)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (day, agent, kind, model, outcome)"
    " DO UPDATE SET calls = usage_daily.calls + excluded.calls,"
    " input_tokens = usage_daily.input_tokens + excluded.input_tokens,"
    " output_tokens = usage_daily.output_tokens + excluded.output_tokens,"
    " cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,"
    " cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,"
    " cost_usd = usage_daily.cost_usd + excluded.cost_usd,"
    " unpriced = usage_daily.unpriced + excluded.unpriced,"
    " seconds = usage_daily.seconds + excluded.seconds"
)


def roll_up(store: Sql, cutoff: float, batch: int) -> int:
    """One batch of usage detail older than `cutoff` added to its day's sums, then
    deleted, in one transaction: counted once, whatever stops the run."""
    with store.tx():
        rows = store.execute(_USAGE, (cutoff, batch)).fetchall()
        days: dict[tuple[str, ...], list[float]] = {}
        for r in rows:
            day = datetime.fromtimestamp(r[1], UTC).date().isoformat()
            sums = days.setdefault((day, r[2], r[3], r[4], r[5]), [0.0] * 8)
            priced = r[10] is not None
            for i, v in enumerate((1, r[6], r[7], r[8], r[9], r[10] or 0.0, not priced)):
                sums[i] += v
            sums[7] += r[11]
        for key, s in days.items():
            whole = [int(v) for v in s[:5]]
            store.execute(_ADD_DAY, (*key, *whole, s[5], int(s[6]), s[7]))
        if rows:
            marks = ", ".join("?" * len(rows))
            store.execute(f"DELETE FROM llm_usage WHERE id IN ({marks})", tuple(r[0] for r in rows))
    return len(rows)
