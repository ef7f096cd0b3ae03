"""The `switchboard` command: `chat`, `run`, `status` (and `python -m bot`).

The environment is read here, once; everything below receives `Settings`.
A bad setting is one line on stderr naming the variable, and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from bot.app import App, configured_channels
from bot.status import render_status
from bot.store import Store
from config.settings import Settings, SettingsError, load_settings, require_llm

NO_CHANNEL = (
    "switchboard run: no channel is configured. Set SLACK_BOT_TOKEN with SLACK_APP_TOKEN "
    "(or SLACK_SIGNING_SECRET), DISCORD_BOT_TOKEN, or EMAIL_ADDRESS with IMAP_*/SMTP_* "
    "(see config/switchboard.toml), or use `switchboard chat` to talk in the terminal."
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="switchboard", description=__doc__.splitlines()[0])
    p.add_argument(
        "--config",
        type=Path,
        help="TOML settings file "
        "(default: $SWITCHBOARD_CONFIG, else config/switchboard.toml if present)",
    )
    p.add_argument("--data-dir", type=Path, help="where all state lives (default ./var)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("chat", help="talk to the coordinator in this terminal")
    sub.add_parser("run", help="start every configured channel")
    sub.add_parser("status", help="agents, workers, questions, triggers, channels")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings(args.config, data_dir=args.data_dir)
        if args.command == "status":
            return status(settings)
        require_llm(settings)
    except SettingsError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    if args.command == "chat":
        _log_to_file(settings)
        return asyncio.run(serve(settings, ["terminal"]))
    channels = configured_channels(settings)
    if not channels:
        print(NO_CHANNEL, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return asyncio.run(serve(settings, channels))


def status(settings: Settings) -> int:
    if not settings.db_path.exists():
        print(
            f"No Switchboard data in {settings.data_dir} yet (start `switchboard chat` or "
            "`switchboard run`)."
        )
        return 0
    store = Store(settings.db_path, readonly=True)
    try:
        print(render_status(store))
    finally:
        store.close()
    return 0


async def serve(settings: Settings, channels: list[str]) -> int:
    app = App(settings, channels)
    await app.start()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, done.set)
    waits = [asyncio.create_task(done.wait())]
    waits += [asyncio.create_task(c.closed.wait()) for c in app.channels if hasattr(c, "closed")]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in waits:
        task.cancel()
    await app.stop()
    return 0


def _log_to_file(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=settings.data_dir / "switchboard.log",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
