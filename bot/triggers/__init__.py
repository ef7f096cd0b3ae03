"""Triggers on APScheduler: the six trigger types of the contract, what firing does,
the config file's schedules and heartbeat, and the status section.

Core: imports only `bot` core modules and `config`. The app wires
`bot.triggers.engine.TriggerEngine` (start after restore, stop before the store
closes) and the agent tools. This package's top exports the trigger vocabulary, which
lives below the store that reads and writes it: the spec in `bot/core/trigger_spec.py`,
the row in `bot/store/trigger_rows.py`.
"""

from bot.core.trigger_spec import TYPES, TriggerError, TriggerSpec, build_spec
from bot.store.trigger_rows import TriggerRow

__all__ = ["TYPES", "TriggerError", "TriggerRow", "TriggerSpec", "build_spec"]
