"""The `init` and `doctor` subcommands and `--version`, added to bot/cli.py's parser
in one place."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

COMMANDS = ("init", "doctor")


def installed_version() -> str:
    try:
        return version("switchboard")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def add(p: argparse.ArgumentParser, sub: argparse._SubParsersAction, after: object) -> None:
    p.add_argument("--version", action="version", version=f"switchboard {installed_version()}")
    parents = [after] if isinstance(after, argparse.ArgumentParser) else []
    init = sub.add_parser(
        "init", parents=parents, help="ask which channels and model; write a config and .env"
    )
    init.add_argument("--channels", default="", help="comma list: slack, discord, email")
    init.add_argument("--model", default=None, help="the model (default claude-sonnet-5)")
    init.add_argument("--name", default="Switchboard", help="the bot's name (Slack manifest)")
    init.add_argument("--email-address", default="", help="the bot's address (email)")
    init.add_argument("--imap-host", default="", help="IMAP server (email)")
    init.add_argument("--smtp-host", default="", help="SMTP server (email)")
    init.add_argument("--env-file", type=Path, default=Path(".env"), help="default ./.env")
    init.add_argument("--yes", action="store_true", help="ask nothing: the flags and defaults")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    doctor = sub.add_parser(
        "doctor", parents=parents, help="check settings, tokens, scopes, model, data, database"
    )
    doctor.add_argument("--offline", action="store_true", help="no network checks")


def run(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        from bot.setup import doctor

        return doctor.run(args.config, args.data_dir, online=not args.offline)
    from bot.setup import init
    from bot.setup.init import DEFAULT_MODEL, Answers, parse_channels

    try:
        channels = parse_channels(args.channels)
    except ValueError as exc:
        print(f"switchboard init: --channels: {exc}")
        return 2
    given = Answers(
        name=args.name,
        channels=channels,
        model=args.model or DEFAULT_MODEL,
        email_address=args.email_address,
        imap_host=args.imap_host,
        smtp_host=args.smtp_host,
    )
    config = args.config or Path("switchboard.toml")
    return init.run(given, config, args.env_file, interactive=not args.yes, force=args.force)
