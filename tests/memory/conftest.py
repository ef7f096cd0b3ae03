"""The memory room's tests rank sections, whatever the machine's load: a search embeds
every section it needs before answering (in production it stops after
`QUERY_SECONDS` and a background thread does the rest; test_memory_meaning tests that)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def search_embeds_everything_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agents.memory.vectors.QUERY_SECONDS", 600.0)
