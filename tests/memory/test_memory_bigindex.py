"""A huge daily log: the first search indexes keywords for a bounded time, answers from
what is indexed with a note, and a background thread finishes the rest (issue 34)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from agents.memory import parts, search
from agents.memory.agent import INDEXING
from agents.memory.search import MemoryIndex
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


def wait_indexed(index: MemoryIndex, seconds: float = 60.0) -> None:
    """Until the background indexer has finished (or stopped) and let go. refresh()
    takes the indexer's lock before it returns and the thread lets go of it last, so
    the lock free means the thread is over, whether it finished the file or failed."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if index._draining.acquire(blocking=False):
            index._draining.release()
            return
        time.sleep(0.05)


def test_each_slice_carries_on_without_reading_or_hashing_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "INSERT_BATCH", 500)
    monkeypatch.setattr(search, "SLICE_SECONDS", 0.02)
    index = memory_at(tmp_path, SWITCHBOARD_MEMORY_SEARCH="keywords").agent("coordinator").index
    big_log(tmp_path / "agents/coordinator")
    reads: list[str] = []
    real_read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda p, *a, **k: (
        reads.append(p.name), real_read(p, *a, **k))[1])  # fmt: skip
    hashed: list[int] = []
    real_sha1 = parts.hashlib.sha1
    monkeypatch.setattr(parts.hashlib, "sha1", lambda data: (
        hashed.append(len(data)), real_sha1(data))[1])  # fmt: skip
    slices: list[int] = []
    real_insert = MemoryIndex._insert
    monkeypatch.setattr(MemoryIndex, "_insert", staticmethod(lambda *a: (
        slices.append(a[4]), real_insert(*a))[1]))  # fmt: skip
    index.refresh(seconds=0.02)
    assert index.indexing
    wait_indexed(index)
    assert not index.indexing
    assert len(slices) > 3, slices  # written in many slices, each from where the last stopped
    assert slices == sorted(slices) and slices[0] == 0
    assert reads.count("2026-11-27.md") == 1
    assert len(hashed) == reads.count("2026-11-27.md") + reads.count("MEMORY.md")
    assert "locker 7" in index.search("zeppelin hangar").hits[0].text


def test_a_background_failure_is_logged_once_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(search, "INSERT_BATCH", 500)
    monkeypatch.setattr(search, "SLICE_SECONDS", 0.02)
    # every search looks at the files (no 2 s between stat walks): "the next search"
    # below is the one right after the fault is gone, not one 2 s later
    memory = memory_at(
        tmp_path, SWITCHBOARD_MEMORY_SEARCH="keywords", SWITCHBOARD_MEMORY_RESCAN_SECONDS="0"
    )
    index = memory.agent("coordinator").index
    big_log(tmp_path / "agents/coordinator")
    real_insert = MemoryIndex._insert

    def broken_in_the_background(*args: object) -> int:
        if "_drain" in threading.current_thread().name:
            raise sqlite3.OperationalError("database or disk is full")
        return real_insert(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryIndex, "_insert", staticmethod(broken_in_the_background))
    for _ in range(3):  # three searches, three background threads, each failing
        index.refresh(force=True, seconds=0.02)
        wait_indexed(index, 5.0)
    said = [r for r in caplog.records if "in the background failed" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].levelname == "WARNING"
    assert "2026-11-27.md" in said[0].getMessage() and "disk is full" in said[0].getMessage()
    # once the fault is gone the next search carries on and finishes
    monkeypatch.setattr(MemoryIndex, "_insert", staticmethod(real_insert))
    index.refresh(seconds=0.02)
    wait_indexed(index)
    assert not index.indexing
