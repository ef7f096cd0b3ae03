"""Triggers on APScheduler: the six trigger types of the contract, what firing does,
the config file's schedules and heartbeat, and the status section.

Core: imports only `bot` core modules and `config`. The app wires `TriggerEngine`
(start after restore, stop before the store closes) and the agent tools.
"""

from bot.triggers.engine import TriggerEngine
from bot.triggers.model import TYPES, TriggerError, TriggerSpec, build_spec
from bot.triggers.rows import TriggerRow

__all__ = ["TYPES", "TriggerEngine", "TriggerError", "TriggerRow", "TriggerSpec", "build_spec"]
