"""When is a conversation quiet? For `switchboard chat` fed from a pipe or a file.

A script of lines (`echo question | switchboard chat`, `switchboard chat < lines.txt`)
is handled like a person who reads each answer before typing the next line: after
each line, and at the end of input, the chat waits until no agent has work under
way and the terminal's outbox is empty. A parked worker (waiting for a person) does
not count as work, nor does an agent waiting for an approval: it is reported, and the
next line may be its answer. Neither does work held by the daily budget: it resumes at
a later start.

This is part of the composition root (it looks at the coordinator and the team).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bot.core.readout import ago

if TYPE_CHECKING:
    from bot.app import App

POLL_SECONDS = 0.05
#: consecutive quiet polls: a reply can wake an agent in the loop turn after it is queued
QUIET_POLLS = 3


def quiet(app: App, target: str = "terminal") -> bool:
    if app.store.outbox.outbox_pending_count(target) != 0:
        return False
    if app.ops.budget.exceeded and app.llm.in_flight == 0:
        return True  # nothing moves until the daily budget allows it (said at the end)
    coordinator = app.coordinator
    waiting = {(r.agent, r.held.get("key")) for r in app.human.approvals.pending.values()}
    busy = [
        key for key in coordinator.sessions if (coordinator.mailbox.node_id, key) not in waiting
    ]
    if busy or len(coordinator.mailbox):
        return False
    for worker in app.team.workers.values():
        approving = (worker.row.id, "task") in waiting
        if (worker.row.status == "running" and not approving) or len(worker.mailbox):
            return False
    return True


async def settle(app: App) -> None:
    """Return once the chat has been quiet for a few polls in a row."""
    calm = 0
    while calm < QUIET_POLLS:
        await asyncio.sleep(POLL_SECONDS)
        calm = calm + 1 if quiet(app) else 0


def parked_report(app: App) -> str:
    """What people still owe the agents, said when a scripted chat ends."""
    names = {worker_id: w.row.name for worker_id, w in app.team.workers.items()}
    lines = [
        f"{names.get(q.worker, q.worker)} is still waiting for an answer "
        f"(asked {ago(q.asked_at)} in {q.target}): {q.question}"
        for q in app.store.agents.open_questions()
    ]
    lines += [
        f"{r.speaker} is still waiting for approval of {r.tool} (asked {ago(r.requested_at)} "
        f"in {r.target}): reply approve or deny <reason>"
        for r in app.store.approvals.pending()
    ]
    if lines:
        lines.append("Run `switchboard chat` again to answer.")
    if app.ops.budget.waiting:
        lines.append(
            f"{app.ops.budget.waiting} model call(s) wait for the daily budget "
            "(SWITCHBOARD_DAILY_BUDGET_USD); they resume at the next start once it allows."
        )
    return "\n".join(lines)
