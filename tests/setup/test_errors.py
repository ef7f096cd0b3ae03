"""Errors a person can act on, each one line naming what to change: a missing PostgreSQL
driver, a refused API key and an unreachable model (in the chat and on the console, once
per change of state), a home target on a channel that is not configured, an approver
who matches nobody."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.proc import ROOT, run_command


def _without_psycopg(tmp_path: Path) -> str:
    """A directory whose `psycopg` cannot be imported, as in a venv without the extra."""
    hidden = tmp_path / "hide" / "psycopg"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    return str(hidden.parent)


def test_a_database_url_without_the_driver_is_one_line(tmp_path: Path, fake: FakeAnthropic) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "PORT"))}
    env.update(fake.env(), SWITCHBOARD_DATABASE_URL="postgresql://sb:pw@127.0.0.1:1/sb",
               PYTHONPATH=f"{_without_psycopg(tmp_path)}:{ROOT}")  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "bot", "--data-dir", str(tmp_path / "d"), "chat"],
                          env=env, cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "switchboard: SWITCHBOARD_DATABASE_URL needs the PostgreSQL driver (psycopg), which is "
        "not installed: pip install 'switchboard[postgres]' in the bot's venv\n"
    )


def test_a_refused_key_names_the_variable(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.fail(401, times=3)
    fake.responder = lambda call: [text("back again")]
    env = {**fake.env(), "SWITCHBOARD_LLM_RETRY_BASE_SECONDS": "0.1",
           "SWITCHBOARD_LLM_RETRY_MAX_SECONDS": "0.2"}  # fmt: skip
    done = run_command(["chat", "--data-dir", str(tmp_path / "d")], env, tmp_path, input="hello\n")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("[switchboard]")]
    assert said == [
        "[switchboard] The model is unavailable right now (its API key was refused; the "
        "operator needs to fix the key); I will answer as soon as it is back."
    ]
    assert "[coordinator] back again" in done.stdout
    assert "AuthenticationError" not in done.stdout + done.stderr
    log = (tmp_path / "d" / "switchboard.log").read_text()
    console = [line for line in log.splitlines() if "the model" in line]
    assert len(console) == 2, console  # once when it broke, once when it came back
    assert f"the model cannot be used: ANTHROPIC_API_KEY was refused by {fake.url}" in console[0]
    assert "the model answers again" in console[1]


def test_a_home_nowhere_and_an_approver_nobody_are_warned_at_start(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    env = {
        **fake.env(),
        "SWITCHBOARD_HOME": "discord:123",
        "SWITCHBOARD_APPROVERS": "Bobby,U0ANN1234",
    }
    data = tmp_path / "d"
    done = run_command(["chat", "--data-dir", str(data)], env, tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    warned = [
        line for line in (data / "switchboard.log").read_text().splitlines() if "WARNING" in line
    ]
    assert any(
        "SWITCHBOARD_HOME is discord:123, but discord does not run here (running: terminal)" in w
        for w in warned
    ), warned
    approvers = [w for w in warned if "SWITCHBOARD_APPROVERS" in w]
    assert len(approvers) == 1 and "'Bobby' matches no [[people]] name" in approvers[0]


def test_channel_and_mcp_failures_reach_the_console_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    from tests.kits.proc import Switchboard
    from tests.kits.slack_kit import free_port

    config = tmp_path / "switchboard.toml"
    config.write_text('[[mcp_servers]]\nname = "ops"\ncommand = "/nonexistent/python"\n')
    env = {
        **fake.env(),
        "SWITCHBOARD_CONFIG": str(config),
        "EMAIL_ADDRESS": "bot@localhost",
        "EMAIL_AUTHSERV_ID": "mx.localhost",
        "IMAP_HOST": "127.0.0.1",
        "IMAP_PORT": str(free_port()),
        "IMAP_USER": "bot@localhost",
        "IMAP_PASSWORD": "pw",
        "IMAP_TLS": "none",
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(free_port()),
        "SMTP_TLS": "none",
    }
    bot = Switchboard(["--data-dir", str(tmp_path / "d"), "run"], env, tmp_path)
    try:
        bot.expect("WARNING switchboard: email: reconnecting (", timeout=30)
        bot.expect("WARNING switchboard: MCP server ops: failed (", timeout=30)
        lines = bot.settle(8)  # several retries of each
    finally:
        bot.proc.terminate()
        bot.proc.wait(15)
    assert len([line for line in lines if "switchboard: email: reconnecting" in line]) == 1
    assert len([line for line in lines if "MCP server ops: failed" in line]) == 1


def test_the_slack_sdk_repeating_a_failed_reconnect_is_heard_once() -> None:
    import logging

    from channels.slack.connection import _Repeated

    quiet = _Repeated()

    def record(message: str, at: float, level: int = logging.ERROR) -> logging.LogRecord:
        made = logging.LogRecord("channels.slack.bolt", level, "", 0, message, None, None)
        made.created = at
        return made

    failed = "Failed to retrieve WSS URL: service_unavailable\nTraceback ..."
    heard = [quiet.filter(record(failed, t)) for t in (0.0, 5.0, 10.0, 599.0, 601.0)]
    assert heard == [True, False, False, False, True]
    assert quiet.filter(record("another problem", 11.0))
    assert quiet.filter(record(failed, 12.0, logging.INFO))  # below a warning: as it is
