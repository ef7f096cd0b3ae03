"""Finished workers' folders folded into `agents/.retired/<month>.md` by the pruning run
(bot/store/prune_agents.py), on both backends, by a clock moved 120 days on: the text
stays (it is memory), the folder goes; a parked worker, the coordinator, a folder written
lately, one with a transcript still kept, a person's profile or a file that is not text,
all stay; a crash between the append and the removal folds a folder once."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from agents.memory.files import AgentFiles
from bot.store import growth
from bot.store.core import ParkedState, Store, WorkerRow
from bot.store.prune import Pruner
from bot.store.prune_agents import retire_workers
from config.retention import DAY

LATER = 120 * DAY


def worker_folder(data: Path, name: str, said: str) -> AgentFiles:
    files = AgentFiles(data / "agents" / name, 100_000)
    files.write("SOUL.md", f"You are {name}, a worker of the team.\n")
    files.append_entry(said)
    return files


def aged(path: Path, when: float) -> None:
    for folder, _, names in os.walk(path):
        for name in [*names, "."]:
            os.utime(os.path.join(folder, name), (when, when))


def month_file(data: Path) -> Path:
    return data / "agents" / ".retired" / f"{datetime.now(UTC):%Y-%m}.md"


def test_an_ended_workers_folder_is_folded_and_the_rest_stays(store: Store, tmp_path: Path) -> None:
    data, now = tmp_path / "data", time.time()
    old = worker_folder(data, "w-old", "chose blue for the banner")
    (old.root / ".search.sqlite").write_bytes(b"SQLite format 3\x00")  # derived: not kept
    store.agents.upsert_worker(
        WorkerRow("w-old", "W-old", "task", "done", "slack:C1/d", "slack:C1")
    )
    worker_folder(data, "w-parked", "asked which colour")
    store.agents.upsert_worker(WorkerRow("w-parked", "W-parked", "task", "parked", "slack:C1/p",
                                         "slack:C1", 1, ParkedState("q1", "tu1")))  # fmt: skip
    worker_folder(data, "coordinator", "the team's talk")
    aged(worker_folder(data, "w-recent", "written ten days ago").root, now + 110 * DAY)
    kept = worker_folder(data, "w-transcript", "has a transcript")
    (kept.root / "archive").mkdir()
    (kept.root / "archive" / "t.jsonl").write_text("{}\n")
    aged(kept.root / "archive", now + 110 * DAY)
    worker_folder(data, "w-binary", "holds a picture")
    (data / "agents" / "w-binary" / "shot.png").write_bytes(b"\x89PNG")
    profile = worker_folder(data, "w-profile", "knows Bob").root / "users"
    profile.mkdir()
    (profile / "bob.md").write_text("Bob likes tea\n")

    p = Pruner(store, 90 * DAY, 365 * DAY, clock=lambda: now + LATER,
               files=partial(growth.old_files, data))  # fmt: skip
    p.folders = partial(retire_workers, data)
    run = p.run_now()

    assert run.removed["worker_folders"] == 1
    assert not (data / "agents" / "w-old").exists()
    text = month_file(data).read_text()
    assert "## w-old · last written" in text
    assert "### SOUL.md" in text and "You are w-old" in text
    assert "chose blue for the banner" in text
    assert ".locks" not in text and "SQLite format" not in text
    for name in ("w-parked", "coordinator", "w-recent", "w-transcript", "w-binary", "w-profile"):
        assert (data / "agents" / name / "SOUL.md").is_file(), name
        assert f"## {name} " not in text
    assert p.run_now().removed.get("worker_folders", 0) == 0


def test_a_crash_between_the_append_and_the_removal_folds_once(tmp_path: Path) -> None:
    data, later = tmp_path / "data", time.time() + DAY
    store = Store(tmp_path / "db.sqlite")
    try:
        for name in ("w1", "w2", "w3"):
            worker_folder(data, name, f"the work of {name}")
        assert retire_workers(data, store, later, batch=1) == 1  # w1 folded
        aside = data / "agents" / ".retired" / ".folding"
        stamp = time.time_ns()
        os.rename(data / "agents" / "w2", aside / f"w2.{stamp}")  # crashed before its append
        text = month_file(data).read_text()
        (aside / f"w1.{stamp}").mkdir()  # crashed after its append: its section is there
        marker = text.split("<!-- folded ", 1)[1].split(" -->", 1)[0]
        os.rename(aside / f"w1.{stamp}", aside / marker)
        assert retire_workers(data, store, later) == 3  # the two left, then w3
        text = month_file(data).read_text()
        for name in ("w1", "w2", "w3"):
            assert text.count(f"## {name} · ") == 1, name
            assert text.count(f"the work of {name}") == 1
        assert not any(aside.iterdir())
        assert sorted(os.listdir(data / "agents")) == [".retired"]
    finally:
        store.close()


def test_a_worker_writing_after_its_folder_was_folded_gets_a_fresh_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(tmp_path / "db.sqlite")
    try:
        files = worker_folder(data, "alice", "the first task")  # a memory still held open
        assert retire_workers(data, store, time.time() + DAY) == 1
        files.append_entry("a new task under the same name")
        assert "new task" in files.read(files.day_path(files.now().date()))
        assert "the first task" not in (files.root / files.day_path(files.now().date())).read_text()
    finally:
        store.close()


def test_a_folder_that_cannot_be_folded_is_left_and_the_others_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = Store(tmp_path / "db.sqlite")
    try:
        for name in ("w1", "w2"):
            worker_folder(data, name, f"the work of {name}")
        rename = os.rename

        def refused(src: object, dst: object) -> None:
            if str(src).endswith("w1"):
                raise PermissionError("read-only")
            rename(src, dst)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "rename", refused)
        assert retire_workers(data, store, time.time() + DAY) == 1
        assert (data / "agents" / "w1" / "SOUL.md").is_file()
        assert "the work of w2" in month_file(data).read_text()
    finally:
        store.close()


def test_a_run_folds_every_folder_due_not_a_fixed_few(tmp_path: Path) -> None:
    """A run capped at 200 folders fell behind a soak spawning ~280 workers between two
    runs: 5,700 folders were left after 36 minutes."""
    data, later = tmp_path / "data", time.time() + DAY
    store = Store(tmp_path / "db.sqlite")
    try:
        for i in range(300):
            worker_folder(data, f"w{i}", "done")
        assert retire_workers(data, store, later) == 300
        assert os.listdir(data / "agents") == [".retired"]
    finally:
        store.close()
