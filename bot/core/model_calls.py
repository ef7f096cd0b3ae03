"""What a model call was, as the ledger, the metrics and the dashboard read it: who it
was for (`CallLabel`), the tokens it used (`Usage`) and how it ended (`CallRecord`).

Plain records in the bot core, so the operator surface reads model calls without
importing the agents that make them (agents/model/llm.py makes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    #: the part of output_tokens spent thinking (billed as output)
    thinking_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CallLabel:
    """Who a model call is for: usage and cost are recorded under it."""

    agent: str
    kind: Literal["coordinator", "worker", "memory"]
    conversation: str | None = None


UNLABELLED = CallLabel("", "memory")
CallOutcome = Literal["ok", "unavailable", "refused"]


@dataclass(slots=True)
class CallRecord:
    """One finished model call, as the provider's observers see it."""

    label: CallLabel
    model: str
    outcome: CallOutcome
    seconds: float
    usage: Usage
    error: str = ""
