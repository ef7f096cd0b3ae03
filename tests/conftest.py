"""Shared fixtures: a clean environment, the fake Anthropic API, settings on tmp_path,
the database on each backend. The kits below register theirs here, once, for every test:
PostgreSQL (`pg_cluster`, `pg_url`), the fake Slack (`slack`), the fake Discord
(`discord_fake`), headless Chromium (`browser`) and dovecot (`dovecot`, `tls_material`)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.store.core import Store
from config.settings import Database, Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import make_settings

pytest_plugins = [
    "tests.kits.pgcluster",
    "tests.kits.oauth_kit",
    "tests.kits.slack_kit",
    "tests.kits.discord_kit",
    "tests.kits.browser_kit",
    "tests.kits.mail_kit",
    "tests.kits.security_kit",
    "tests.kits.openai_kit",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos", "the kill -9 tests (tests/store/test_chaos*.py)")
    group.addoption("--kills", default=3, type=int, help="SIGKILLs in the chaos test (3)")
    group.addoption("--seed", default=None, help="the chaos test's seed (default: random)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: kills the bot at random moments (--kills/--seed)")
    config.addinivalue_line(
        "markers", "solo: holds a wall-clock window; scripts/test runs it alone, after the rest"
    )


#: fixtures that start a heavy server: Chromium, dovecot, PostgreSQL
SLOW_FIXTURES = {"browser", "dovecot", "oauth_dovecot", "pg_cluster", "pg_url"}
#: tests that hold a wall-clock promise (a failover within 2 s, /healthz 503 within 15 s, a
#: parse within 50 ms) or kill processes at random: a neighbour test on the same two cores
#: would be measured with them, so scripts/test runs these alone, after the parallel part
SOLO_FILES = {
    "tests/store/test_chaos.py",
    "tests/store/test_chaos_nodes.py",
    "tests/store/test_chaos_clock.py",
    "tests/ops/test_channel_health.py",
    "tests/email/test_imap_health.py",
    "tests/email/test_corpus.py",
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m solo` (scripts/test's second part) imports only SOLO_FILES: collecting every
    other test file just to deselect its tests took ~13 s."""
    name = collection_path.name
    if config.getoption("markexpr") != "solo" or not name.startswith("test_"):
        return None
    if not name.endswith(".py") or not collection_path.is_relative_to(config.rootpath):
        return None
    return collection_path.relative_to(config.rootpath).as_posix() not in SOLO_FILES or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` on every test that asks (through any fixture) for Chromium, dovecot or
    PostgreSQL, runs on the `database` fixture's PostgreSQL, or is a chaos test; under
    pytest-xdist, the files longest first (`_longest_first`)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            item.get_closest_marker("chaos")
            or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
            or params.get("database") == "postgres"
        ):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.split("::")[0] in SOLO_FILES:
            item.add_marker(pytest.mark.solo)
    if hasattr(config, "workerinput"):  # an xdist worker: its order is the queue's
        items[:] = _longest_first(items)


#: files with a test of 9 s or more (CI, or measured alone): about the seconds those tests
#: take, on top of the file's rough cost (SLOW_TEST, OTHER_TEST); a file missing here
#: that takes long may end up last, alone
LONG_FILES = {
    "tests/email/test_fuzz.py": 20,
    "tests/longrun/test_soak.py": 33,
    "tests/longrun/test_mcp_http_leaks.py": 17,
    "tests/longrun/test_no_leaks.py": 25,
    "tests/memory/test_memory_meaning.py": 14,
    "tests/slack/test_slack_live.py": 12,
    "tests/store/test_backup.py": 11,
    "tests/eval/test_eval_providers.py": 32,
    "tests/eval/test_eval.py": 11,
    "tests/tools/test_approvals.py": 21,
    "tests/discord/test_discord_catchup.py": 11,
    "tests/ops/test_ops_dashboard.py": 10,
    "tests/model/test_model_properties.py": 10,
    "tests/discord/test_discord_progress.py": 10,
}
#: a test's rough cost when nothing better is known: one with a heavy server (`slow`), other
SLOW_TEST, OTHER_TEST = 2.0, 0.3


def _longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items by file (each file's own order kept), the longest files first.

    scripts/test runs `--dist loadfile --no-loadscope-reorder`: the workers take whole
    files in this order. xdist's own order (most tests first) left the files of one long
    test (the fuzz, the soak, the MCP restarts) to the end, where one worker ran them
    while the other had nothing left; longest first, the end is made of short files."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def seconds(name: str) -> float:
        tests = files[name]
        slow = sum(1 for item in tests if item.get_closest_marker("slow"))
        return LONG_FILES.get(name, 0) + slow * SLOW_TEST + (len(tests) - slow) * OTHER_TEST

    return [item for name in sorted(files, key=seconds, reverse=True) for item in files[name]]


@pytest.fixture
def chaos_plan(request: pytest.FixtureRequest) -> tuple[int, int]:
    """A chaos test's (kills, seed), from --kills and --seed (default: a random seed);
    printed, so a failure can be replayed."""
    kills = int(request.config.getoption("--kills"))
    seed = request.config.getoption("--seed")
    seed = int(seed) if seed is not None else random.randrange(1_000_000)
    print(f"\n{request.node.name}: seed={seed} kills={kills}")
    return kills, seed


_OURS = ("SWITCHBOARD_", "ANTHROPIC_", "OPENAI_", "SLACK_", "DISCORD_", "EMAIL_", "IMAP_", "SMTP_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's settings."""
    for name in list(os.environ):
        if name.startswith(_OURS) or name == "PORT":
            monkeypatch.delenv(name)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server
    refused = [f"{call.agent}: {reasons}" for call, reasons in server.violations]
    assert not refused, f"requests the real Messages API refuses: {refused}"


@pytest.fixture
def settings(tmp_path: Path, fake: FakeAnthropic) -> Settings:
    return make_settings(tmp_path / "data", fake)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """The store's database on each backend: a SQLite file, or an empty PostgreSQL one."""
    if request.param == "sqlite":
        return tmp_path / "switchboard.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store(database: Database) -> Iterator[Store]:
    """A store open on `database` (each backend), closed after the test."""
    s = Store(database)
    yield s
    s.close()


@pytest.fixture
def database_env(database: Database) -> dict[str, str]:
    """The environment that puts an app's store on `database` (SQLite: the data dir's)."""
    return {"SWITCHBOARD_DATABASE_URL": database} if isinstance(database, str) else {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:  # pragma: no cover - runs only when a test fails
    """A failing test shows the last events of the app it ran (events.jsonl under its
    tmp_path), and for email tests the end of dovecot's log: on CI that output is all
    there is to go on."""
    report = yield
    if report.failed and call.when == "call":
        tmp = item.funcargs.get("tmp_path") if hasattr(item, "funcargs") else None
        if isinstance(tmp, Path):
            for log in sorted(tmp.rglob("events.jsonl")):
                tail = log.read_text(errors="replace").splitlines()[-40:]
                report.sections.append((f"last events ({log})", "\n".join(tail)))
        world = item.funcargs.get("world") if hasattr(item, "funcargs") else None
        dovecot = getattr(world, "dovecot", None)
        if dovecot is not None:
            report.sections.append(("dovecot log", "\n".join(dovecot.log().splitlines()[-40:])))
    return report
