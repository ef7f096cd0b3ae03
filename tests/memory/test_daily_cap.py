"""A daily log at its size cap is summarised, not cut: the full text moves to
memory/earlier/, the log goes on with an outline, and nothing anyone wrote is lost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agents.memory.files import EARLIER_DIR, AgentFiles, MemoryRefused


def _files(tmp_path: Path, cap: int = 4_096) -> AgentFiles:
    return AgentFiles(tmp_path / "agent", cap)


def test_the_entry_that_would_pass_the_cap_folds_the_day_and_is_kept(tmp_path: Path) -> None:
    files = _files(tmp_path)
    for n in range(40):
        files.append_entry(f"finding {n}: the cache misses on key {n} " + "x" * 80, f"t{n}")
    day = files.day_path(files.now().date())
    log = files.read(day)
    assert len(log.encode()) <= files.max_bytes
    assert "finding 39" in log  # the newest entry is in today's log, whole
    earlier = sorted((files.root / EARLIER_DIR).glob("*.md"))
    assert earlier, "the day was folded at least once"
    everything = log + "".join(p.read_text() for p in earlier)
    for n in range(40):
        assert f"finding {n}: the cache misses on key {n} " + "x" * 80 in everything
    assert f"full text: {EARLIER_DIR}/" in log
    assert "- " in log.split("## Earlier today", 1)[1]  # an outline line per entry


def test_a_second_fold_carries_the_first_fold_s_pointer(tmp_path: Path) -> None:
    files = _files(tmp_path, cap=2_048)
    for n in range(60):
        files.append_entry(f"note {n} " + "y" * 100)
    earlier = sorted(p.name for p in (files.root / EARLIER_DIR).glob("*.md"))
    assert len(earlier) >= 2
    log = files.read(files.day_path(files.now().date()))
    newest = earlier[-1]
    assert newest in log
    # the chain back to the first fold is in the files it points to
    chained = (files.root / EARLIER_DIR / newest).read_text()
    assert "full text: " in chained


def test_an_entry_larger_than_the_cap_is_refused_as_before(tmp_path: Path) -> None:
    files = _files(tmp_path)
    with pytest.raises(MemoryRefused, match="SWITCHBOARD_MEMORY_FILE_MAX_BYTES"):
        files.append_entry("z" * 5_000)


def test_writers_at_once_fold_once_and_lose_nothing(tmp_path: Path) -> None:
    files = _files(tmp_path)

    def write(who: int) -> None:
        for n in range(15):
            files.append_entry(f"w{who}-{n} " + "q" * 90)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    day = files.day_path(files.now().date())
    texts = [files.read(day)] + [p.read_text() for p in (files.root / EARLIER_DIR).glob("*.md")]
    everything = "".join(texts)
    for w in range(4):
        for n in range(15):
            assert f"w{w}-{n} " + "q" * 90 in everything
    assert len(files.read(day).encode()) <= files.max_bytes
