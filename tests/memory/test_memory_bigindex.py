"""A huge daily log: the first search indexes keywords for a bounded time, answers from
what is indexed with a note, and a background thread finishes the rest (issue 34)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agents.memory import search
from agents.memory.agent import INDEXING
from tests.kits.memory_kit import call, memory_at, toolbox

SECTIONS = 60_000


def big_log(agent_dir: Path) -> None:
    folder = agent_dir / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        f"## 09:{n % 60:02d} entry {n}\nRoutine status check {n}, all fine."
        for n in range(SECTIONS)
    ]
    lines.append("## 23:59 last entry\nThe zeppelin hangar key moved to locker 7.")
    (folder / "2026-11-27.md").write_text("\n".join(lines) + "\n")


async def test_first_search_is_bounded_and_the_rest_is_indexed_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "QUERY_SECONDS", 0.2)
    monkeypatch.setattr(search, "INSERT_BATCH", 500)
    monkeypatch.setattr(search, "SLICE_SECONDS", 0.1)
    memory = memory_at(tmp_path, SWITCHBOARD_MEMORY_SEARCH="keywords")
    box = toolbox(memory)
    big_log(tmp_path / "agents/coordinator")
    started = time.monotonic()
    first = (await call(box, "memory_search", query="zeppelin hangar")).text
    assert time.monotonic() - started < 0.2 + 3.0  # budget plus reading/splitting margin
    assert INDEXING in first
    assert "locker 7" not in first  # the end of the log is not indexed yet
    index = memory.agent("coordinator").index
    for _ in range(1200):  # up to a minute
        if not index.indexing:
            break
        await asyncio.sleep(0.05)
    assert not index.indexing
    later = (await call(box, "memory_search", query="zeppelin hangar")).text
    assert "locker 7" in later and INDEXING not in later
