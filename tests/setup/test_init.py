"""`switchboard init`: flags or scripted answers on stdin give a commented config the
settings accept and a `.env` of mode 600; nothing is overwritten without a yes; the
Slack manifest carries the bot's name; the offline checks run at the end. And
`switchboard --version`."""

from __future__ import annotations

import io
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bot.setup import envfile
from bot.setup.init import Answers, run
from config.settings import load_settings
from tests.kits.proc import ROOT, run_command


def _init(tmp: Path, given: Answers, stdin: str = "", interactive: bool = False) -> str:
    out = io.StringIO()
    code = run(given, tmp / "switchboard.toml", tmp / ".env", interactive, stdin=io.StringIO(stdin),
               out=out)  # fmt: skip
    assert code == 0
    return out.getvalue()


def _manifest(text: str) -> dict:
    start = text.index("\n{\n")
    return json.loads(text[start : text.index("\n}\n", start) + 2])


def test_flags_write_a_config_the_settings_take_and_a_private_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    given = Answers(name="Ops Bot", channels=["slack", "email"], model="claude-opus-5",
                    email_address="bot@example.com", imap_host="imap.example.com")  # fmt: skip
    text = _init(tmp_path, given)
    env = tmp_path / ".env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    secrets = envfile.parse(env.read_text())
    assert set(secrets) == {"SWITCHBOARD_CONFIG", "ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN",
                            "SLACK_APP_TOKEN", "IMAP_PASSWORD", "SMTP_PASSWORD"}  # fmt: skip
    config = (tmp_path / "switchboard.toml").read_text()
    assert "# SWITCHBOARD_MODEL" in config and 'host = "smtp.example.com"' in config
    filled = {"ANTHROPIC_API_KEY": "k", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
              "IMAP_PASSWORD": "p", "SMTP_PASSWORD": "p",
              "EMAIL_AUTHSERV_ID": "mx.example.com"}  # fmt: skip
    settings = load_settings(tmp_path / "switchboard.toml", filled)
    assert settings.model == "claude-opus-5" and settings.imap_user == "bot@example.com"
    assert settings.slack_enabled and settings.email_enabled and not settings.discord_enabled
    app = _manifest(text)
    assert app["display_information"]["name"] == "Ops Bot"
    assert app["features"]["bot_user"]["display_name"] == "Ops Bot"
    # then the offline checks: an empty secret is the first thing to fill in
    assert "Checking what can be checked offline:" in text
    assert "✗ settings: IMAP_PASSWORD is required when EMAIL_ADDRESS is set" in text


def test_scripted_answers_on_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    answers = "Helper\nsmtp, discord\ndiscord\n\nsk-ant-test\n"  # a wrong channel, then right
    text = _init(tmp_path, Answers(), stdin=answers, interactive=True)
    assert "unknown channel 'smtp': choose from slack, discord, email" in text
    assert "The bot's name [Switchboard]: " in text
    assert "The Slack app manifest" not in text  # no Slack, no manifest
    secrets = envfile.parse((tmp_path / ".env").read_text())
    assert secrets["ANTHROPIC_API_KEY"] == "sk-ant-test" and "DISCORD_BOT_TOKEN" in secrets
    config = (tmp_path / "switchboard.toml").read_text()
    assert 'model = "claude-sonnet-5"' in config and "[discord]" in config


def test_nothing_is_overwritten_without_a_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "switchboard.toml").write_text("# mine\n")
    (tmp_path / ".env").write_text("ANTHROPIC_API_KEY=mine\n")
    text = _init(tmp_path, Answers(channels=["slack"]))  # --yes: asks nothing, keeps them
    assert "Kept" in text and (tmp_path / "switchboard.toml").read_text() == "# mine\n"
    assert (tmp_path / ".env").read_text() == "ANTHROPIC_API_KEY=mine\n"
    # asked: no keeps the config, yes replaces the .env
    text = _init(tmp_path, Answers(), stdin="\n\n\n\nn\ny\n", interactive=True)
    assert (tmp_path / "switchboard.toml").read_text() == "# mine\n"
    assert (tmp_path / ".env").read_text().startswith("# Secrets for Switchboard")
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600


def test_the_command_line(tmp_path: Path) -> None:
    done = run_command(["init", "--channels", "discord", "--yes", "--model", "claude-haiku-5-5"],
                       {}, tmp_path, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Wrote switchboard.toml." in done.stdout and (tmp_path / ".env").exists()
    bad = run_command(["init", "--channels", "irc", "--yes"], {}, tmp_path)
    assert bad.returncode == 2 and "unknown channel 'irc'" in bad.stdout + bad.stderr


def test_version() -> None:
    done = subprocess.run([sys.executable, "-m", "bot", "--version"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 0
    assert re.fullmatch(r"switchboard \d+\.\d+\.\d+\S*\n", done.stdout)
