"""The cost of the audit write per tool call, with and without, in one run.

    .venv/bin/python tests/bench/bench_audit.py

A tool call's bookkeeping is the `tool.called` event agents/loop/loop.py emits after the
call: a line in events.jsonl and the in-process subscribers (trigger watchers,
metrics). With the audit log, the event also carries a digest of the arguments and
becomes a row in the store's append-only `audit` table (an autocommitted INSERT in
WAL mode, as outside a checkpoint). Both run in the real app's store, event log and
subscribers, alternating in batches; printed: microseconds per tool call, p50 / p99.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.core.events import EventLog  # noqa: E402
from bot.core.redact import args_digest  # noqa: E402
from bot.ledger.audit import AuditLog  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, make_settings, running_app  # noqa: E402

BATCH = 500
ROUNDS = 12
ARGS = {"service": "api", "sql": "SELECT * FROM deploys WHERE service = 'api' LIMIT 20"}


def audit_on(events: EventLog, on: bool) -> None:
    """Attach or detach the app's audit subscriber (found by its class)."""
    subs: list[Any] = events._subscribers
    mine = [fn for fn in subs if isinstance(getattr(fn, "__self__", None), AuditLog)]
    if on and not mine:
        subs.append(audit_on.saved)  # type: ignore[attr-defined]
    if not on and mine:
        audit_on.saved = mine[0]  # type: ignore[attr-defined]
        subs.remove(mine[0])


def batch(events: EventLog, audited: bool) -> list[float]:
    times = []
    for i in range(BATCH):
        t0 = time.perf_counter()
        fields: dict[str, Any] = {"tool": "ops__deploy_status", "ms": 1.0, "ok": True}
        if audited:
            fields.update(
                conversation=f"slack:C1/{i}", person="Ann", person_id="slack:UANN",
                args_digest=args_digest(ARGS), outcome="ok",
            )  # fmt: skip
        events.emit("tool.called", "coordinator", **fields)
        times.append((time.perf_counter() - t0) * 1e6)
    return times


async def run() -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    settings = make_settings(Path(tempfile.mkdtemp()), fake)
    results: dict[bool, list[float]] = {False: [], True: []}
    async with running_app(settings, [Recorder()]) as app:
        for _ in range(ROUNDS):
            for audited in (False, True):
                audit_on(app.events, audited)
                results[audited] += batch(app.events, audited)
        audit_on(app.events, True)
        rows = len(app.store.audit.since(0, limit=1_000_000))
    fake.stop()
    print(f"tool calls per variant: {ROUNDS * BATCH:,} (audit rows written: {rows:,})")
    for audited, label in ((False, "without audit"), (True, "with audit   ")):
        q = statistics.quantiles(results[audited], n=100)
        print(f"{label}: p50 {q[49]:7.1f} us   p99 {q[98]:7.1f} us per tool call")
    base = statistics.quantiles(results[False], n=100)
    with_ = statistics.quantiles(results[True], n=100)
    print(f"audit adds: p50 {with_[49] - base[49]:+.1f} us, p99 {with_[98] - base[98]:+.1f} us")


if __name__ == "__main__":
    asyncio.run(run())
