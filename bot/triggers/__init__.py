"""Triggers on APScheduler: the six trigger types of the contract, what firing does,
the config file's schedules and heartbeat, and the status section.

Core: imports only `bot` core modules and `config`. The app wires
`bot.triggers.engine.TriggerEngine` (start after restore, stop before the store
closes) and the agent tools. This package's top exports only the model and the row
type, because the store (below the engine) reads and writes trigger rows.
"""

from bot.triggers.model import TYPES, TriggerError, TriggerSpec, build_spec
from bot.triggers.rows import TriggerRow

__all__ = ["TYPES", "TriggerError", "TriggerRow", "TriggerSpec", "build_spec"]
