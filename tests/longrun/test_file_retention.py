"""Retention of the files people sent (`files/`), on both backends, by a clock moved 120
days on: a file nothing kept names goes with SWITCHBOARD_RETENTION; one that a parked
worker, an open question, a pending approval, a message not yet routed or a live
conversation still names stays, and so does one sent again lately."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

import pytest

from bot.core.messages import Attachment
from bot.inbox.files import FileStore
from bot.store import growth, prune_files
from bot.store.approvals import ApprovalRow
from bot.store.core import ParkedState, QuestionRow, Store, WorkerRow
from bot.store.prune import Pruner
from config.retention import DAY
from tests.kits.app_kit import inbound

LATER = 120 * DAY


def saved(files: FileStore, name: str) -> Attachment:
    return files.save(Attachment(name, "text/plain"), f"the bytes of {name}".encode())


def test_old_files_go_unless_something_kept_names_them(store: Store, tmp_path: Path) -> None:
    data = tmp_path / "data"
    files = FileStore(data, 1_000_000)
    now = time.time()
    # a parked worker from 120 days ago: its conversation shows a file, the message that
    # asked (in the thread of its open question) carries another
    parked, asked = saved(files, "parked.txt"), saved(files, "asked.txt")
    store.agents.upsert_worker(WorkerRow("w1", "w1", "task", "parked", "slack:C1/p", "slack:C1",
                                         1, ParkedState("q-w1", "tu1")))  # fmt: skip
    store.agents.save_conversation(
        "w1", "task", [{"role": "user", "content": f"look at {parked.path}"}], "slack:C1"
    )
    store.agents.add_question(
        QuestionRow("q-w1", "w1", "which?", "slack:C1", "slack:C1/p", [], "open", now)
    )
    ask = inbound("see this", conversation="slack:C1/p")
    ask.attachments = [asked]
    store.journal(ask, "routed")
    # a pending approval whose arguments name a file
    approved = saved(files, "approve.txt")
    store.approvals.add(ApprovalRow("a1", "coordinator", "slack:C1/a", "coordinator", "ops__x",
                                    {"path": approved.path}, "tu", "t"))  # fmt: skip
    # a message not yet routed
    waiting = saved(files, "waiting.txt")
    fresh = inbound("not routed yet", conversation="slack:C2/w")
    fresh.attachments = [waiting]
    store.journal(fresh)
    # a live conversation (spoken in 10 days ago by the pruner's clock) shows a file
    live = saved(files, "live.txt")
    store.agents.save_conversation(
        "coordinator", "slack:C3/1", [{"role": "user", "content": f"[File {live.path}]"}], "s"
    )
    store.execute("UPDATE conversations SET updated_at = ? WHERE key = 'slack:C3/1'",
                  (now + 110 * DAY,))  # fmt: skip
    # what has served its purpose: a file in a handled message of a quiet thread
    done = saved(files, "done.txt")
    old = inbound("here", conversation="slack:C4/1")
    old.attachments = [done]
    store.journal(old, "routed")
    store.agents.save_conversation(
        "coordinator", "slack:C4/1", [{"role": "user", "content": f"[File {done.path}]"}], "s"
    )
    # the same bytes sent again lately (10 days ago by the pruner's clock)
    again = saved(files, "again.txt")
    os.utime(data / again.path, (now + 110 * DAY, now + 110 * DAY))

    p = Pruner(store, 90 * DAY, 365 * DAY, batch=7, clock=lambda: now + LATER,
               files=partial(growth.old_files, data))  # fmt: skip
    run = p.run_now()

    assert run.removed["files"] == 1
    assert not (data / done.path).exists() and not (data / done.path).parent.exists()
    for kept in (parked, asked, approved, waiting, live, again):
        assert (data / kept.path).is_file(), kept.name
    assert p.run_now().removed.get("files", 0) == 0


def test_a_file_sent_again_is_kept_for_another_retention(tmp_path: Path) -> None:
    files = FileStore(tmp_path, 1_000_000)
    first = saved(files, "report.txt")
    long_ago = time.time() - 100 * DAY
    os.utime(tmp_path / first.path, (long_ago, long_ago))
    again = saved(files, "report.txt")
    assert again.path == first.path
    assert (tmp_path / first.path).stat().st_mtime > time.time() - 60
    store = Store(tmp_path / "db.sqlite")
    try:
        assert growth.old_files(tmp_path, store, time.time() - DAY) == 0
        for path in (tmp_path / first.path, (tmp_path / first.path).parent):
            os.utime(path, (long_ago, long_ago))
        assert growth.old_files(tmp_path, store, time.time() - DAY) == 1
    finally:
        store.close()


def test_a_file_sent_again_while_the_rows_are_read_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the pruner read the rows (nothing names the old folder), then the same
    file is sent again and its row journaled, then the pruner removes old folders. The
    save touched the folder, so the check under the lock keeps it."""
    files = FileStore(tmp_path, 1_000_000)
    first = saved(files, "report.txt")
    long_ago = time.time() - 100 * DAY
    for path in (tmp_path / first.path, (tmp_path / first.path).parent):
        os.utime(path, (long_ago, long_ago))

    def rows_then_a_save(store: object) -> set[str]:
        saved(files, "report.txt")  # arrives while the pruner reads the rows
        return set()

    monkeypatch.setattr(prune_files, "named", rows_then_a_save)
    store = Store(tmp_path / "db.sqlite")
    try:
        assert growth.old_files(tmp_path, store, time.time() - DAY) == 0
        assert (tmp_path / first.path).read_bytes() == b"the bytes of report.txt"
    finally:
        store.close()
