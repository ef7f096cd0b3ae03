"""`/healthz`: is Switchboard doing its job? JSON for load balancers and uptime checks.

200 with `"status": "ok"` when every configured channel is connected, the scheduler
runs and the store answers; otherwise 503 with `"status": "degraded"`, and the body
says what is wrong. The LLM's last success and last error are reported, but do not
fail the check: a model outage is not fixed by restarting the process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bot.ops.desk import OpsView
from bot.store.core import StoreError


@dataclass(slots=True)
class LLMHealth:
    """The provider's last success and last error, fed by its call records."""

    last_success: float | None = None
    last_error: float | None = None
    error: str = ""

    def record(self, outcome: str, error: str) -> None:
        if outcome == "ok":
            self.last_success = time.time()
        else:
            self.last_error, self.error = time.time(), error[:300]

    def to_json(self) -> dict[str, Any]:
        return {
            "last_success": self.last_success,
            "last_error": self.last_error,
            "error": self.error or None,
        }


def health(view: OpsView, llm: LLMHealth) -> tuple[int, dict[str, Any]]:
    """A leader is healthy when its channels, scheduler and store are up; a follower
    (bot/leadership.py) when what it runs is: its Slack connection and the database."""
    node = view.node
    rows = view.store.health()
    states = {channel: state for channel, state, _detail, _at in rows}
    channels = {
        c.kind: states.get(c.kind, "unknown")
        for c in view.channels
        if node.role == "leader" or node.runs(c.kind)
    }
    store = _store_state(view)
    scheduler_state = "running" if view.scheduling() else "stopped"
    space = view.store.space
    disk = space.state() if space is not None else "ok"
    ok = (
        all(state == "connected" for state in channels.values())
        and store == "ok"
        and disk == "ok"
        and (scheduler_state == "running" or node.role == "follower")
    )
    body = {
        "status": "ok" if ok else "degraded",
        "channels": channels,
        # what is wrong with a channel that is not connected, in its own one line (for
        # the token holder: an error text may name a host or an account)
        "channel_details": {
            c: d for c, s, d, _ in rows if c in channels and s != "connected" and d
        },
        "scheduler": scheduler_state,
        "store": store,
        "disk": disk,  # "full": new messages wait (bot/store/space.py)
        "llm": {
            **llm.to_json(),
            "in_flight": view.model.in_flight,
            "waiting": view.model.waiting,
        },
        "budget": {
            "limit_usd": view.budget.limit,
            "spent_today_usd": round(view.ledger.today(), 6),
            "exceeded": view.budget.exceeded,
        },
        "uptime_seconds": round(time.time() - view.started_at, 1),
        "node": node.to_json(),
    }
    return (200 if ok else 503), body


def _store_state(view: OpsView) -> str:
    try:
        view.store.views.outbox_pending()
    except StoreError as exc:
        return f"error: {exc}"
    return "ok"


def public_health(body: dict[str, Any]) -> dict[str, Any]:
    """What anyone may read: states and times, never an error text or spend."""
    llm = {k: v for k, v in body["llm"].items() if k != "error"}
    public = {k: v for k, v in body.items() if k != "channel_details"}
    return {**public, "llm": llm, "budget": {"exceeded": body["budget"]["exceeded"]}}
