"""`switchboard backup DIR` while the bot runs, `switchboard restore DIR` once it stopped.

Real subprocesses (`switchboard chat` over the fake model, the commands themselves).
"""

from __future__ import annotations

import fcntl
import sqlite3
import subprocess
from pathlib import Path

from bot.store import migrations
from bot.store.core import Store
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits import pgcluster
from tests.kits.proc import Switchboard, chat
from tests.kits.script import TeamScript


def _command(
    tmp_path: Path, *args: str, data: str = "data", env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    argv = ["--data-dir", str(tmp_path / data), *args]
    return Switchboard(argv, env or {}, tmp_path).finish()


def _answer(tmp_path: Path, fake: FakeAnthropic, answer: str) -> list[str]:
    sb = chat(tmp_path, fake.env())
    try:
        sb.expect("you are talking to the coordinator")
        sb.send(answer)
        sb.expect(f"Report based on: {answer}")
        return sb.settle(0.3)
    finally:
        assert sb.quit() == 0


def test_a_backup_taken_while_running_restores_the_parked_worker(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    script = TeamScript()
    fake.responder = script
    running = chat(tmp_path, fake.env())
    try:
        running.send("please research GPUs")
        running.expect("[Alice asks] Data center or consumer GPUs?")
        code, lines = _command(tmp_path, "backup", "bk")
        assert code == 0 and lines[0].startswith(f"Backed up {tmp_path / 'data'} to bk"), lines
        code, lines = _command(tmp_path, "restore", "bk")
        assert code == 2 and len(lines) == 1 and "a bot is running on" in lines[0], lines
        code, lines = _command(tmp_path, "backup", "bk")
        assert code == 2 and lines == ["switchboard: bk exists: a backup goes to a new directory"]
    finally:
        running.kill()
    _answer(tmp_path, fake, "Data center only")  # the worker finishes in the live data dir

    code, lines = _command(tmp_path, "restore", "bk")
    assert code == 0 and lines[0].startswith("Restored bk into"), lines
    lines = _answer(tmp_path, fake, "Consumer only")  # parked again, as in the backup
    assert script.answers_seen == ["Data center only", "Consumer only"]
    assert not any("asks]" in line for line in lines), "the question was asked again"
    assert (tmp_path / "data" / "switchboard.db.before-restore.bak").is_file()


def test_a_backup_holds_complete_lines_and_state_not_derived_indexes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data / "switchboard.db")
    store.set_kv("slack:cursor", "1000.1")  # left in the WAL: the online backup copies it
    (data / "events.jsonl").write_text('{"type": "a"}\n{"type": "b"}\n{"type": "hal')
    (data / "agents" / "coordinator").mkdir(parents=True)
    (data / "agents" / "coordinator" / "MEMORY.md").write_text("# Memory\n- likes tea\n")
    (data / "agents" / "coordinator" / ".search.sqlite").write_bytes(b"SQLite format 3\x00")
    try:
        assert _command(tmp_path, "backup", "bk")[0] == 0
    finally:
        store.close()
    bk = tmp_path / "bk"
    assert (bk / "events.jsonl").read_text() == '{"type": "a"}\n{"type": "b"}\n'
    assert (bk / "agents" / "coordinator" / "MEMORY.md").read_text().endswith("likes tea\n")
    assert not (bk / "agents" / "coordinator" / ".search.sqlite").exists()
    assert sorted(p.name for p in bk.glob("switchboard*")) == ["switchboard.db"]
    db = sqlite3.connect(bk / "switchboard.db")
    assert db.execute("SELECT value FROM kv").fetchall() == [("1000.1",)]
    assert db.execute("PRAGMA user_version").fetchone() == (migrations.VERSION,)
    db.close()


def test_restore_creates_a_missing_data_dir_and_refuses_what_is_not_a_backup(
    tmp_path: Path,
) -> None:
    Store(tmp_path / "data" / "switchboard.db").close()
    (tmp_path / "data" / "notes.md").write_text("kept\n")
    assert _command(tmp_path, "backup", "bk")[0] == 0
    code, lines = _command(tmp_path, "restore", "bk", data="elsewhere/new")
    assert code == 0, lines
    assert (tmp_path / "elsewhere" / "new" / "notes.md").read_text() == "kept\n"
    assert (tmp_path / "elsewhere" / "new" / "switchboard.db").is_file()
    (tmp_path / "empty").mkdir()
    code, lines = _command(tmp_path, "restore", "empty")
    assert code == 2 and lines == [
        "switchboard: empty is not a Switchboard backup (no switchboard.db in it)"
    ]


def test_a_bot_does_not_start_while_a_restore_holds_the_data_dir(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with (tmp_path / "data" / "switchboard.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # what `switchboard restore` holds while it copies
        env = {"ANTHROPIC_API_KEY": "unused", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
        code, lines = _command(tmp_path, "chat", env=env)
    assert code == 2 and len(lines) == 1 and "a restore into" in lines[0], lines
    assert not (tmp_path / "data" / "switchboard.db").exists()


def test_on_postgresql_the_files_are_backed_up_and_restored_with_the_pg_dump_line(
    tmp_path: Path, pg_url: str
) -> None:
    url = pg_url.replace("postgres@", "postgres:s3cret-pw@")
    Store(url).close()
    (tmp_path / "data" / "agents").mkdir(parents=True)
    (tmp_path / "data" / "agents" / "MEMORY.md").write_text("- likes tea\n")
    env = {"SWITCHBOARD_DATABASE_URL": url}
    code, lines = _command(tmp_path, "backup", "bk", env=env)
    assert code == 0 and lines[0].startswith(f"Backed up {tmp_path / 'data'} to bk"), lines
    assert (tmp_path / "bk" / "agents" / "MEMORY.md").read_text() == "- likes tea\n"
    dump = lines[1].split("`")[1]
    assert dump.startswith("pg_dump ") and "s3cret-pw" not in "\n".join(lines)
    bindir = pgcluster.bindir()
    subprocess.run(f"{bindir}/{dump}", shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "bk" / "switchboard.pgdump").stat().st_size > 0
    code, lines = _command(tmp_path, "restore", "bk", data="elsewhere", env=env)
    assert code == 0 and (tmp_path / "elsewhere" / "agents" / "MEMORY.md").is_file(), lines
    assert lines[1].split("`")[1].startswith("pg_restore --clean --if-exists --dbname=")
    assert "s3cret-pw" not in "\n".join(lines)
