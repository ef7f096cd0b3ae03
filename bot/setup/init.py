"""`switchboard init`: asks which channels and model (or takes them from flags), writes a
commented `switchboard.toml` and a `.env` (mode 600) for the secrets, never overwriting
either without asking, prints the Slack app manifest for this bot's name, then runs the
doctor's offline checks.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bot.setup import doctor, envfile
from bot.setup.manifest import render

CHANNELS = ("slack", "discord", "email")
DEFAULT_MODEL = "claude-sonnet-5"


@dataclass
class Answers:
    name: str = "Switchboard"
    channels: list[str] = field(default_factory=list)
    model: str = DEFAULT_MODEL
    api_key: str = ""
    email_address: str = ""
    imap_host: str = ""
    smtp_host: str = ""


class Asker:
    """Questions on stdin, or the flags' answers when `--yes` says not to ask."""

    def __init__(self, stdin: TextIO, out: TextIO, interactive: bool) -> None:
        self.stdin, self.out, self.interactive = stdin, out, interactive

    def ask(self, question: str, default: str = "") -> str:
        if not self.interactive:
            return default
        shown = f" [{default}]" if default else ""
        print(f"{question}{shown}: ", end="", file=self.out, flush=True)
        line = self.stdin.readline()
        if not line:  # end of input: the defaults for the rest
            self.interactive = False
        return line.strip() or default

    def yes(self, question: str) -> bool:
        if not self.interactive:
            return False
        return self.ask(f"{question} (y/N)").lower() in ("y", "yes")


def parse_channels(text: str) -> list[str]:
    """`slack, Email` -> ['slack', 'email']; ValueError naming an unknown one."""
    chosen = [c.strip().lower() for c in text.replace(" ", ",").split(",") if c.strip()]
    unknown = [c for c in chosen if c not in (*CHANNELS, "terminal")]
    if unknown:
        raise ValueError(f"unknown channel {unknown[0]!r}: choose from {', '.join(CHANNELS)}")
    return [c for c in CHANNELS if c in chosen]


def gather(given: Answers, asker: Asker) -> Answers:
    a = given
    a.name = asker.ask("The bot's name", a.name)
    while True:
        text = asker.ask(
            "Channels (slack, discord, email; the terminal always works)", ",".join(a.channels)
        )
        try:
            a.channels = parse_channels(text)
            break
        except ValueError as exc:
            if not asker.interactive:
                raise
            print(exc, file=asker.out)
    a.model = asker.ask("Model (docs/models.md)", a.model)
    a.api_key = asker.ask("ANTHROPIC_API_KEY (empty: fill it in .env later)", a.api_key)
    if "email" in a.channels:
        a.email_address = asker.ask("The bot's email address", a.email_address)
        a.imap_host = asker.ask("IMAP server", a.imap_host)
        a.smtp_host = asker.ask("SMTP server", a.smtp_host or a.imap_host.replace("imap", "smtp"))
    return a


def _q(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def config_text(a: Answers, today: str) -> str:
    lines = [
        f"# Switchboard settings, written by `switchboard init` on {today}.",
        "# Every setting, its variable and default: docs/settings.md. The environment wins",
        "# over this file; secrets (tokens, passwords, the API key) belong in .env.",
        "",
        "[switchboard]",
        f"{'model = ' + _q(a.model):<35}# SWITCHBOARD_MODEL",
        'data_dir = "var"                   # SWITCHBOARD_DATA_DIR: all state lives here',
        '# home = "slack:C0123456789"       # SWITCHBOARD_HOME: where notices with no',
        "#                                  #   conversation go (schedules, reminders)",
        '# timezone = "Europe/Berlin"       # SWITCHBOARD_TIMEZONE (default UTC)',
        "# http_port = 8080                 # SWITCHBOARD_HTTP_PORT: /healthz, /metrics, dashboard",
        "# approvers = []                   # SWITCHBOARD_APPROVERS: who may approve gated tools",
    ]
    if "slack" in a.channels:
        lines += [
            "",
            "[slack]                            # tokens: SLACK_BOT_TOKEN, SLACK_APP_TOKEN in .env",
            "# allowed_users = []               # SLACK_ALLOWED_USERS (empty: everyone)",
        ]
    if "discord" in a.channels:
        lines += [
            "",
            "[discord]                          # token: DISCORD_BOT_TOKEN in .env",
            "# allowed_channels = []            # DISCORD_ALLOWED_CHANNELS (empty: all)",
        ]
    if "email" in a.channels:
        lines += [
            "",
            "[email]                            # docs/email.md",
            f"address = {_q(a.email_address)}",
            "allowed_senders = []               # EMAIL_ALLOWED_SENDERS: who may write (empty: "
            "nobody)",
            "",
            "[imap]                             # password: IMAP_PASSWORD in .env",
            f"host = {_q(a.imap_host)}",
            f"user = {_q(a.email_address)}",
            "",
            "[smtp]                             # password: SMTP_PASSWORD in .env",
            f"host = {_q(a.smtp_host)}",
            f"user = {_q(a.email_address)}",
        ]
    return "\n".join(lines) + "\n"


def env_text(a: Answers, config: Path) -> str:
    lines = [
        "# Secrets for Switchboard (this file is mode 600). `switchboard` reads ./.env at",
        "# start; a variable already in the environment wins.",
        f"SWITCHBOARD_CONFIG={config}",
        f"ANTHROPIC_API_KEY={a.api_key}",
    ]
    if "slack" in a.channels:
        lines += ["SLACK_BOT_TOKEN=", "SLACK_APP_TOKEN="]
    if "discord" in a.channels:
        lines += ["DISCORD_BOT_TOKEN="]
    if "email" in a.channels:
        lines += ["IMAP_PASSWORD=", "SMTP_PASSWORD="]
    return "\n".join(lines) + "\n"


def write(path: Path, text: str, mode: int, asker: Asker, force: bool, out: TextIO) -> bool:
    """Write `path` (made with `mode`); an existing file only when asked or forced."""
    if path.exists() and not force and not asker.yes(f"{path} exists. Overwrite it?"):
        print(f"Kept {path} as it was.", file=out)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, mode)  # an existing file keeps its mode through O_CREAT
    print(f"Wrote {path}.", file=out)
    return True


def run(
    given: Answers,
    config: Path,
    env: Path,
    interactive: bool,
    force: bool = False,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
) -> int:
    asker = Asker(stdin, out, interactive)
    try:
        answers = gather(given, asker)
    except ValueError as exc:
        print(f"switchboard init: {exc}", file=sys.stderr)
        return 2
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    write(config, config_text(answers, today), 0o644, asker, force, out)
    write(env, env_text(answers, config), 0o600, asker, force, out)
    if "slack" in answers.channels:
        print(
            f"\nThe Slack app manifest for {answers.name} (https://api.slack.com/apps → "
            "Create New App → From a manifest → JSON; docs/slack.md has the steps):\n",
            file=out,
        )
        print(render(answers.name), file=out)
    print("\nChecking what can be checked offline:", file=out)
    envfile.load(env)
    doctor.run(config, None, out=out, online=False)
    print(
        f"\nNext: fill in the empty values in {env}, then `switchboard doctor` "
        "(signs in everywhere) and `switchboard run` (or `switchboard chat`).",
        file=out,
    )
    return 0
