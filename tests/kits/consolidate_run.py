"""One consolidation run in a process of its own (the kill -9 test):
`python -m tests.kits.consolidate_run` with SWITCHBOARD_DATA_DIR and the fake's
ANTHROPIC_BASE_URL in the environment; prints the run's summary."""

from __future__ import annotations

import asyncio
import os

from agents.memory.consolidate import Consolidator
from agents.memory.shared import Shared
from agents.model.llm import Provider
from bot.core.events import EventLog
from bot.parts import connector
from bot.store.core import Store
from config.settings import load_settings


async def main() -> None:
    s = load_settings(None, os.environ)
    store = Store(s.db_path)
    shared = Shared(s.data_dir, s.memory_file_max_bytes, s.timezone, 0)
    llm = Provider(connector(s), s.model, s.max_tokens, s.max_llm_calls)
    consolidator = Consolidator(store, shared, llm, EventLog(s.data_dir / "events.jsonl"))
    print(await consolidator.run(), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
