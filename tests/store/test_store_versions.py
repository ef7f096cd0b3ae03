"""Schema versions: a data dir written by last week's main carries on; a newer one is refused.

The old main runs as a real subprocess from its own tree, taken from this repository's
history (commit a5b872b, `git archive`; or `SWITCHBOARD_BEFORE_MAIN`, a tree of it),
against the same fake model as today's code.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from bot.store import migrations
from bot.store.core import Store
from bot.store.migrations_sql import V1_TABLES
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.proc import Switchboard, chat
from tests.kits.script import TeamScript

ROOT = Path(__file__).resolve().parents[2]
#: last week's main: the release whose data dirs this one must carry on
LAST_WEEK = "a5b872b"


@pytest.fixture(scope="module")
def before_main(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree of last week's main, from the repository's own history."""
    given = os.environ.get("SWITCHBOARD_BEFORE_MAIN")
    if given:
        return Path(given)
    tree = tmp_path_factory.mktemp("before-main")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", LAST_WEEK], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def _sql(path: Path, query: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def _tables(path: Path) -> set[object]:
    return {r[0] for r in _sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_last_weeks_data_dir_carries_on_its_parked_worker(
    tmp_path: Path, fake: FakeAnthropic, before_main: Path
) -> None:
    assert (before_main / "bot" / "store.py").is_file(), f"no old main at {before_main}"
    script = TeamScript()
    fake.responder = script
    old = chat(tmp_path, fake.env(), root=before_main)
    try:
        old.send("please research GPUs")
        old.expect("[Alice asks] Data center or consumer GPUs?")
    finally:
        assert old.quit() == 0
    db = tmp_path / "data" / "switchboard.db"
    assert _sql(db, "PRAGMA user_version") == [(0,)]
    assert "audit" not in _tables(db), "the first process did not run the old code"
    # the old code dropped thinking blocks, which today's models refuse (its coordinator's
    # tool turn); its parked worker's cycle is stored without its thinking too, which the
    # new code must carry on from (agents/loop/turns.py `unthought_cycle`)
    fake.violations.clear()

    new = chat(tmp_path, fake.env())
    try:
        new.expect("you are talking to the coordinator")
        new.send("Data center only")
        assert new.expect("Report based on: Data center only").startswith("[coordinator]")
        lines = new.settle(0.3)
    finally:
        assert new.quit() == 0
    assert script.answers_seen == ["Data center only"]
    assert not any("asks]" in line for line in lines), "the question was asked again"
    refused = [(call.agent, reasons) for call, reasons in fake.violations]
    assert len(refused) == 1 and "Expected `thinking`" in refused[0][1][0], refused
    fake.violations.clear()  # that one 400 is how the new code learns to go on as text
    assert _sql(db, "PRAGMA user_version") == [(migrations.VERSION,)]
    kept = db.with_name("switchboard.db.v0.bak")
    assert _sql(kept, "PRAGMA user_version") == [(0,)]
    assert _sql(kept, "SELECT status FROM workers") == [("parked",)]


@pytest.mark.parametrize("command", ["chat", "status"])
def test_a_newer_schema_version_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    db = tmp_path / "data" / "switchboard.db"
    db.parent.mkdir()
    newer = migrations.VERSION + 1
    _sql(db, f"PRAGMA user_version = {newer}")
    env = {"ANTHROPIC_API_KEY": "unused", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    code, lines = Switchboard(["--data-dir", str(db.parent), command], env, tmp_path).finish()
    assert code == 2
    assert len(lines) == 1, lines
    assert f"schema version {newer}" in lines[0]
    assert f"up to version {migrations.VERSION}" in lines[0]
    assert str(db) in lines[0] and "SWITCHBOARD_DATA_DIR" in lines[0]
    assert _sql(db, "PRAGMA user_version") == [(newer,)]
    assert _tables(db) == set()


def _at_version_1(db: sqlite3.Connection) -> None:
    for statement in migrations.statements(V1_TABLES):
        db.execute(statement)
    db.execute("PRAGMA user_version = 1")


def test_migrations_run_forward_and_keep_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.db"
    db = sqlite3.connect(path, isolation_level=None)
    _at_version_1(db)
    db.execute("INSERT INTO kv (key, value) VALUES ('k', 'v')")
    db.close()
    store = Store(path)
    assert store.get_kv("k") == "v"
    store.audit.add({"at": 1.0, "type": "tool", "agent": "coordinator"})
    store.close()
    assert _sql(path, "PRAGMA user_version") == [(migrations.VERSION,)]
    columns = {r[1] for r in _sql(path, "PRAGMA table_info(approvals)")}
    assert {"requester", "requester_id", "decider_id", "how"} <= columns
    kept = tmp_path / "switchboard.db.v1.bak"
    assert _sql(kept, "PRAGMA user_version") == [(1,)]
    assert "audit" not in _tables(kept)


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.db"
    db = sqlite3.connect(path, isolation_level=None)
    _at_version_1(db)
    db.execute("CREATE TABLE audit (x)")  # v3's index on audit(at) cannot be made
    db.close()
    with pytest.raises(
        migrations.MigrationFailed,
        match=rf"version 1 to {migrations.VERSION} failed \(no such column: at\)",
    ):
        Store(path)
    assert _sql(path, "PRAGMA user_version") == [(1,)]
    columns = {r[1] for r in _sql(path, "PRAGMA table_info(approvals)")}
    assert "requester" not in columns, "v2 landed without v3"


def test_a_fresh_data_dir_starts_at_the_newest_version_without_a_copy(tmp_path: Path) -> None:
    Store(tmp_path / "switchboard.db").close()
    assert _sql(tmp_path / "switchboard.db", "PRAGMA user_version") == [(migrations.VERSION,)]
    assert [p.name for p in tmp_path.glob("*.bak")] == []
