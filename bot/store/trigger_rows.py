"""Trigger rows: what the store keeps for each trigger, and the words of its life.

A plain record type (the SQL that reads and writes it lives in the store, see
`bot/store/triggers.py`). Imports nothing of the project but the trigger model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.core.trigger_spec import TriggerSpec

#: A trigger's life: `active` until it is cancelled, removed from the config, or (a
#: one-shot) has fired, missed or failed; `paused` (pause_trigger, or `enabled = false`
#: in the config) until resumed; `corrupt` when its stored row did not decode.
TriggerStatus = Literal[
    "active", "paused", "fired", "missed", "failed", "cancelled", "removed", "corrupt"
]
PAUSED: TriggerStatus = "paused"
#: What a run of a trigger came to, as recorded in `trigger_runs`.
RunOutcome = Literal["fired", "quiet", "missed", "failed"]
TriggerSource = Literal["tool", "config"]
ACTIVE: TriggerStatus = "active"


@dataclass(slots=True)
class TriggerRow:
    id: str
    spec: TriggerSpec
    status: TriggerStatus = ACTIVE
    source: TriggerSource = "tool"
    created_by: str = "coordinator"
    conversation: str | None = None  # the conversation it was created in
    origin_target: str | None = None  # that conversation's delivery target
    created_at: float = field(default_factory=time.time)
    last_fired_at: float | None = None
    state: dict[str, Any] = field(default_factory=dict)  # heartbeat bookkeeping

    @property
    def job_id(self) -> str:
        return job_id_of(self.id)


def job_id_of(trigger_id: str) -> str:
    return f"trigger:{trigger_id}"


@dataclass(slots=True)
class RunStats:
    missed: int = 0
    last_missed: float | None = None
