"""The approvals check on the routing hot path, before and after its first look.

    .venv/bin/python tests/bench/bench_approval_check.py

Every routed message is first asked "is this an approval answer?" (bot/approvals/desk.py).
Before: two regexes per message. After: `could_be_answer` (one look at the first
character) and the regexes only for texts starting with a or d. Both run in this one
process, alternating, over the same 5,000 chat messages routed through the real app
(journaling on, the routing of bench_core.py), with no approval pending and with one
pending; printed: the check alone (us per message) and its share of intake time.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.approvals import desk as approvals  # noqa: E402
from bot.core.messages import Inbound  # noqa: E402
from bot.store.approvals import ApprovalRow  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app  # noqa: E402

N = 5000
ROUNDS = 3
FAST = approvals.could_be_answer


def before(text: str) -> bool:
    return True  # the old path: straight to the regexes


def use(first_look: Callable[[str], bool]) -> None:
    approvals.could_be_answer = first_look  # type: ignore[assignment]


def pending_row() -> ApprovalRow:
    now = time.time()
    return ApprovalRow(
        id="bench", agent="coordinator", conversation="elsewhere", speaker="coordinator",
        tool="ops__restart_service", args={}, tool_use_id="t", target="terminal",
        requested_at=now, deadline=None,
    )  # fmt: skip


def check_alone(desk: approvals.ApprovalDesk, msgs: list[Inbound]) -> float:
    """us per message for `answers` alone (inside a transaction, as the router calls it)."""
    t0 = time.perf_counter()
    with desk.store.tx():
        for msg in msgs:
            desk.answers(msg, None)
    return (time.perf_counter() - t0) / len(msgs) * 1e6


async def run() -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    settings = make_settings(Path(tempfile.mkdtemp()), fake)
    results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    async with running_app(settings, [Recorder()]) as app:
        app.team.spawn("Parker", "sit", "x", "terminal")
        desk = app.human.approvals
        for pending in (False, True):
            desk.pending = {"bench": pending_row()} if pending else {}
            for _ in range(ROUNDS):
                for name, look in (("before", before), ("after", FAST)):
                    use(look)
                    msgs = [
                        inbound(f"@parker note {i}", conversation=f"c{i % 50}") for i in range(N)
                    ]
                    alone = check_alone(desk, msgs[:1000])
                    t0 = time.perf_counter()
                    for msg in msgs:
                        app.human.accept(msg)
                    intake = (time.perf_counter() - t0) / N * 1e6
                    results.setdefault((name, pending), []).append((alone, intake))
        use(FAST)
        desk.pending = {}
        await app.team.stop("Parker")
    fake.stop()
    for pending in (False, True):
        print(f"{'one approval pending' if pending else 'no approval pending'}:")
        for name in ("before", "after"):
            rows = results[(name, pending)]
            alone = statistics.median(a for a, _ in rows)
            intake = statistics.median(i for _, i in rows)
            print(
                f"  {name:>6}: check {alone:5.2f} us/msg, intake {intake:6.1f} us/msg,"
                f" check = {alone / intake * 100:4.2f}% of intake"
            )


if __name__ == "__main__":
    asyncio.run(run())
