"""Sessions built as the app builds them, without running a turn: a coordinator session
per conversation (`Coordinator._session`) and workers (`Worker(...)`), each holding
what a turn under way holds (its tool definitions, its system prompt, the request body
of its next model call). Used by the memory-per-session test and benchmark."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents.loop.conversation import Conversation
from agents.loop.loop import AgentLoop
from agents.team.worker import Worker
from bot.app import App
from bot.store.schema import WorkerRow
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import make_settings


@contextlib.contextmanager
def built_app(data_dir: Path, fake: FakeAnthropic, **env: str) -> Iterator[App]:
    """The app built (not started): its coordinator, team and services, no tasks."""
    app = App(make_settings(data_dir, fake, **env), [])
    app.build()
    try:
        yield app
    finally:
        app.store.close()


def under_way(session: AgentLoop, agent: str, key: str) -> tuple[Any, ...]:
    """The session with what it holds while its model call is in flight."""
    conv = Conversation.load(session.services.store, agent, key)
    conv.add_text(f"[ann] please look at ticket {key}")
    system = session.role.system_prompt(conv)
    specs = session.toolbox.specs
    memory = session.services.memory
    if memory is not None:
        memory.over_budget(system, specs, conv.messages)  # what every step checks
    request = session.services.llm.request(system, specs, conv.messages)
    return session, conv, system, request


def coordinator_session(app: App, i: int) -> tuple[Any, ...]:
    key = f"slack:C{i:05d}"
    return under_way(app.coordinator._session(key), "coordinator", key)


def worker(app: App, i: int) -> tuple[Any, ...]:
    row = WorkerRow(f"w{i}", f"W{i}", "check the build", "running", f"slack:C{i:05d}", None)
    return under_way(Worker(app.services, row, lambda worker, status: None), row.id, "task")


def sessions(app: App, coordinators: int, workers: int, first: int = 0) -> list[tuple[Any, ...]]:
    """`coordinators` coordinator sessions and `workers` workers, numbered from `first`."""
    held = [coordinator_session(app, i) for i in range(first, first + coordinators)]
    return held + [worker(app, i) for i in range(first, first + workers)]
