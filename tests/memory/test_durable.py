"""Memory on a slow disk (issue 33, bad input: a data dir on a slow disk): no fsync of a
memory file runs on the event loop. Appends reach the file at once and are fsynced from
the memory-sync thread a moment later (agents/memory/durable.py); a worker's published
result, a decision the coordinator states and a person's preference captured from their
message used to fsync on the loop, holding every conversation for a slow disk's fsync.
A slow fsync is said once in the log."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.memory.durable import SYNCER, Syncer
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app


class Fsyncs:
    """Every os.fsync of the process: the file and the thread that made it."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.calls: list[tuple[str, str]] = []

    def __call__(self, fd: int) -> None:
        self.calls.append((os.readlink(f"/proc/self/fd/{fd}"), threading.current_thread().name))
        self.real(fd)

    def on(self, thread: str) -> list[str]:
        return [path for path, name in self.calls if name == thread]


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Fsyncs:
    seen = Fsyncs()
    monkeypatch.setattr(os, "fsync", seen)
    return seen


def test_each_path_is_synced_from_the_syncers_thread_once_per_moment(
    tmp_path: Path, fsyncs: Fsyncs
) -> None:
    syncer = Syncer()
    log = tmp_path / "log.md"
    log.write_text("a")
    gone = tmp_path / "folded.md"  # handed over, then moved away before its turn
    syncer.later(gone)
    for _ in range(50):
        syncer.later(log)
    assert syncer.drain()
    assert set(fsyncs.on("memory-sync")) == {str(log)}
    assert len(fsyncs.calls) <= 2  # 50 appends, one sync a moment (two if it raced)
    assert not fsyncs.on(threading.current_thread().name)


def test_a_slow_fsync_is_said_once_and_its_end_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    delay = {"seconds": 0.3}
    real = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(delay["seconds"])
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    syncer, log = Syncer(), tmp_path / "log.md"
    log.write_text("a")
    for seconds in (0.3, 0.3, 0.0, 0.0):
        delay["seconds"] = seconds
        syncer.later(log)
        assert syncer.drain()
    said = [r.getMessage() for r in caplog.records if "disk" in r.getMessage()]
    assert len(said) == 2
    assert said[0].startswith("the data dir's disk is slow: an fsync of")
    assert said[1].startswith("the data dir's disk is quick again")


def reply(call: Call) -> list[dict[str, Any]]:
    if call.agent == "Alice":
        return [tool("publish", result="The report is done.")]
    if call.tool_results():
        return [text("started")]
    if "write the report" in call.last_text:
        return [tool("spawn_worker", name="Alice", task="write the report")]
    if "is done" in call.last_text:
        return [text("We decided to ship the report on Fridays. Alice's report is in.")]
    return [text("noted")]


async def test_no_memory_file_is_fsynced_on_the_event_loop(
    tmp_path: Path, fake: FakeAnthropic, fsyncs: Fsyncs
) -> None:
    settings = make_settings(tmp_path / "data", fake)
    fake.responder = reply
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("I prefer short answers. Please write the report"))
        await rec.wait_text("report is in")
        app.human.accept(inbound("I prefer tables over prose", conversation="conv-2"))
        await rec.wait_text("noted")
    loop = threading.current_thread().name  # the test's thread runs the event loop
    # a person's profile is rewritten (temp file, fsync, rename) where the preference was
    # heard: the one fsync of memory left on the loop (docs/running-for-months.md)
    on_loop = [p for p in fsyncs.on(loop) if "/data/" in p and not p.endswith(".tmp")]
    assert not on_loop
    assert SYNCER.drain()
    synced = fsyncs.on("memory-sync")
    assert any(p.endswith(".md") and "/alice/memory/" in p for p in synced)  # published
    assert any("decisions" in p for p in synced)  # the coordinator's decision, captured
