"""`switchboard doctor` against the fakes (Slack, Discord, Anthropic; dovecot and an SMTP
relay for email): good settings pass with one ✓ line per check; each broken one fails
with its own ✗ line and a fix line, and the exit status is 1."""

from __future__ import annotations

import asyncio
import io
import os
import re
import sys
import time
from pathlib import Path

import pytest

from bot.setup import doctor
from bot.setup.manifest import BOT_SCOPES
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.kits.slack_kit import free_port


def diagnose(data: Path, online: bool = True) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = doctor.run(None, data, out=out, online=online)
    return code, out.getvalue().splitlines()


@pytest.fixture
def good(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake: FakeAnthropic,
    slack: FakeSlack,
    discord_fake: FakeDiscord,
) -> Path:
    """Settings that work: Slack with every scope the manifest asks, Discord, the model."""
    slack.scopes = ",".join(BOT_SCOPES)
    for name, value in {**fake.env(), **slack.env(), **discord_fake.env()}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    return data


def test_good_settings_pass_one_line_each(good: Path, fake: FakeAnthropic) -> None:
    code, lines = diagnose(good)
    assert code == 0, lines
    names = [line.split(":")[0] for line in lines[:-1]]
    assert names == [
        "✓ settings",
        "✓ data dir",
        "✓ database",
        "✓ dashboard",
        "✓ slack",
        "✓ slack scopes",
        "✓ slack socket mode",
        "✓ discord",
        "✓ model",
    ]
    assert "✓ slack: signed in as @switchboard in Fake Team" in lines
    assert lines[-1] == "All is well."
    assert [c.body["max_tokens"] for c in fake.calls] == [1]  # one token, once


def _failing(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("✗")]


def test_a_revoked_slack_token(good: Path, slack: FakeSlack) -> None:
    slack.fail("auth.test", status=200, error="token_revoked")
    code, lines = diagnose(good)
    assert code == 1
    assert _failing(lines) == ["✗ slack: SLACK_BOT_TOKEN was refused (token_revoked)"]
    fix = lines[lines.index(_failing(lines)[0]) + 1]
    assert fix.startswith("  fix: copy the Bot User OAuth Token")
    assert lines[-1] == "1 problem found."


def test_scopes_the_app_lacks(good: Path, slack: FakeSlack) -> None:
    slack.scopes = "chat:write,app_mentions:read,im:history"
    code, lines = diagnose(good)
    assert code == 1
    (line,) = _failing(lines)
    assert line.startswith("✗ slack scopes: the app lacks assistant:write, channels:history")
    assert "chat:write," not in line  # it has that one


def test_a_wrong_app_token(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-wrong")
    monkeypatch.setattr(FakeSlack, "_apps_connections_open", _refuse_app_token, raising=True)
    _, lines = diagnose(good)
    assert _failing(lines) == ["✗ slack socket mode: SLACK_APP_TOKEN was refused (invalid_auth)"]


async def _refuse_app_token(self: FakeSlack, params: object, token: str) -> tuple[dict, dict]:
    return {"ok": False, "error": "invalid_auth"}, {}


def test_a_wrong_discord_token(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-the-token")
    code, lines = diagnose(good)
    assert code == 1
    assert _failing(lines) == ["✗ discord: DISCORD_BOT_TOKEN was refused (401 Unauthorized)"]


def test_a_wrong_api_key(good: Path, fake: FakeAnthropic) -> None:
    fake.fail(401, times=5)
    code, lines = diagnose(good)
    assert code == 1
    (line,) = _failing(lines)
    assert line == f"✗ model: ANTHROPIC_API_KEY was refused by {fake.url} (invalid x-api-key)"
    assert lines[lines.index(line) + 1] == "  fix: set ANTHROPIC_API_KEY to a valid key"


def test_an_unreachable_model(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    _, lines = diagnose(good)
    (line,) = _failing(lines)
    assert line.startswith(f"✗ model: cannot reach {url}: [Errno 111] Connect call failed")
    assert line.endswith("(ANTHROPIC_BASE_URL)")


def test_a_bad_setting_stops_at_its_line(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_MAX_WORKERS", "eight")
    code, lines = diagnose(good)
    assert code == 1
    assert lines[0].startswith("✗ settings: SWITCHBOARD_MAX_WORKERS: Input should be")
    assert lines[1] == "  fix: set it in .env or the config file (docs/settings.md)"


def test_a_data_dir_open_to_everyone(good: Path) -> None:
    os.chmod(good, 0o777)
    _, lines = diagnose(good, online=False)
    open_to_all = f"✗ data dir: {good} is open to every user of this machine (mode 777)"
    assert _failing(lines) == [open_to_all]
    assert f"  fix: chmod 700 {good}" in lines


def test_a_slow_disk_is_said_not_failed(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fsync

    def slow_fsync(fd: int) -> None:  # an SD card, network storage
        time.sleep(doctor.SLOW_SYNC_SECONDS + 0.1)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    code, lines = diagnose(good, online=False)
    assert code == 0
    line = next(line for line in lines if line.startswith("✓ data dir"))
    assert re.search(r"; slow disk: an fsync took 0\.\d\d s, answers wait for it at times$", line)
    assert list(good.iterdir()) == []  # its probe file removed


def test_postgres_without_its_driver(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", "postgresql://sb:pw@127.0.0.1:1/sb")
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as in a venv without the extra
    code, lines = diagnose(good, online=False)
    assert code == 1
    assert _failing(lines) == [
        "✗ database: SWITCHBOARD_DATABASE_URL is set but the PostgreSQL driver (psycopg) "
        "is not installed"
    ]
    assert "  fix: pip install 'switchboard[postgres]' (in the bot's venv)" in lines


def test_postgres_unreachable(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", f"postgresql://sb:pw@127.0.0.1:{free_port()}/sb")
    _, lines = diagnose(good, online=False)
    (line,) = _failing(lines)
    assert line.startswith("✗ database: cannot reach PostgreSQL: ")


def test_a_dashboard_open_to_the_network(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HTTP_HOST", "0.0.0.0")
    monkeypatch.setenv("SWITCHBOARD_HTTP_PORT", "8080")
    code, lines = diagnose(good, online=False)
    assert code == 1 and "SWITCHBOARD_DASHBOARD_TOKEN is required" in lines[0]
    monkeypatch.setenv("SWITCHBOARD_DASHBOARD_TOKEN", "0123456789abcdef")
    code, lines = diagnose(good, online=False)
    assert code == 0
    assert "✓ dashboard: on 0.0.0.0:8080, behind its token; set SWITCHBOARD_COOKIE_SECURE" in (
        "\n".join(lines)
    )


def test_the_cli_runs_it(good: Path) -> None:
    from bot.cli import main

    assert main(["doctor", "--offline", "--data-dir", str(good)]) == 0


async def test_email_signs_in_to_imap_and_smtp(
    good: Path, dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch
) -> None:
    relay = await SmtpRelay(RelayHandler(dovecot)).start()
    try:
        for name, value in dovecot.env("bot-doctor@localhost", relay.port).items():
            monkeypatch.setenv(name, value)
        code, lines = await asyncio.to_thread(diagnose, good)
        assert code == 0, lines
        assert f"✓ imap: signed in at 127.0.0.1:{dovecot.imap} as bot-doctor@localhost" in lines
        assert f"✓ smtp: connected to 127.0.0.1:{relay.port} (no login)" in lines
        monkeypatch.setenv("IMAP_PASSWORD", "wrong")
        code, lines = await asyncio.to_thread(diagnose, good)
        (line,) = _failing(lines)
        assert line.startswith(f"✗ imap: cannot sign in at 127.0.0.1:{dovecot.imap}: ")
    finally:
        await relay.stop()


def test_an_imap_server_that_is_not_there(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    env = {
        "EMAIL_ADDRESS": "bot@localhost",
        "EMAIL_AUTHSERV_ID": "mx.localhost",
        "IMAP_HOST": "127.0.0.1",
        "IMAP_PORT": str(port),
        "IMAP_USER": "bot@localhost",
        "IMAP_PASSWORD": "pw",
        "IMAP_TLS": "none",
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(free_port()),
        "SMTP_TLS": "none",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, lines = diagnose(good)
    assert code == 1
    failing = _failing(lines)
    assert failing[0].startswith(f"✗ imap: cannot sign in at 127.0.0.1:{port}: ")
    assert failing[1].startswith("✗ smtp: cannot sign in at 127.0.0.1:")
    assert "  fix: check IMAP_HOST, IMAP_PORT, IMAP_TLS, IMAP_USER and IMAP_PASSWORD" in lines


def test_an_env_file_others_can_read(good: Path) -> None:
    env = Path(".env")  # the test runs in tmp_path
    env.write_text("ANTHROPIC_API_KEY=x\n")
    env.chmod(0o644)
    code, lines = diagnose(good, online=False)
    assert code == 1 and _failing(lines) == ["✗ .env: .env is readable by others (mode 644)"]
    assert "  fix: chmod 600 .env" in lines
    env.chmod(0o600)
    code, lines = diagnose(good, online=False)
    assert code == 0 and "✓ .env: .env, mode 600" in lines
