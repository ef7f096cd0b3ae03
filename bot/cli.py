"""The `switchboard` command: `chat`, `run`, `status`, `audit`, `backup`, `restore`,
`init`, `doctor`, `email login` (and `python -m bot`).

The environment is read here, once; everything below receives `Settings`.
A bad setting is one line on stderr naming the variable, and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agents.errors import AgentError
from bot.core import lazy, redact
from bot.evaluation.command import add_eval, run_eval
from bot.setup import commands as setup
from bot.setup import envfile, startup
from bot.store.errors import StoreError
from channels.errors import ChannelError
from config.settings import Settings, SettingsError, load_settings, require_llm

if TYPE_CHECKING:
    from bot.app import App

#: what a command answers in one line (exit 2), each family mapped at its own edge
FAILURES = (SettingsError, StoreError, AgentError, ChannelError)

# The runtime (the SDKs, APScheduler, MCP: seconds to import on a busy machine) is
# imported only once the settings are known to be good: a bad setting and
# `switchboard status` answer at once.

log = logging.getLogger(__name__)

NO_CHANNEL = (
    "switchboard run: no channel is configured. Set SLACK_BOT_TOKEN with SLACK_APP_TOKEN "
    "(or SLACK_SIGNING_SECRET), DISCORD_BOT_TOKEN, or EMAIL_ADDRESS with IMAP_*/SMTP_* "
    "(see config/switchboard.toml), or use `switchboard chat` to talk in the terminal."
)


def _global_options(p: argparse.ArgumentParser, default: object) -> None:
    p.add_argument(
        "--config",
        type=Path,
        default=default,
        help="TOML settings file "
        "(default: $SWITCHBOARD_CONFIG, else config/switchboard.toml if present)",
    )
    p.add_argument(
        "--data-dir", type=Path, default=default, help="where all state lives (default ./var)"
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="switchboard", description=__doc__.splitlines()[0])
    _global_options(p, None)
    # The same options after the subcommand (`switchboard status --data-dir var`, as people
    # type it): SUPPRESS keeps a value given before the subcommand when none comes after.
    after = argparse.ArgumentParser(add_help=False)
    _global_options(after, argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)
    setup.add(p, sub, after)  # init, doctor, --version (bot/setup/commands.py)
    sub.add_parser("chat", parents=[after], help="talk to the coordinator in this terminal")
    sub.add_parser("run", parents=[after], help="start every configured channel")
    sub.add_parser("status", parents=[after], help="agents, workers, questions, triggers, channels")
    audit = sub.add_parser(
        "audit", parents=[after], help="tool calls, approvals, cross-scope accesses (no content)"
    )
    audit.add_argument("--since", help="only the last DURATION: 90s, 30m, 2h, 3d, 1w")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    backup = sub.add_parser(
        "backup", parents=[after], help="copy the state into DIR (new), also while running"
    )
    restore = sub.add_parser(
        "restore", parents=[after], help="put a backup back into the data dir (bot stopped)"
    )
    for command in (backup, restore):
        command.add_argument("dir", type=Path, metavar="DIR")
    add_eval(sub, [after])
    email = sub.add_parser("email", parents=[after], help="email: `login` signs a mailbox in")
    email.add_argument("action", choices=["login"], help="the one-time OAuth2 sign-in")
    hooks = sub.add_parser("hooks", parents=[after], help="send a hook a signed sample payload")
    hooks.add_argument("action", choices=["test"])
    hooks.add_argument("name", help="the [[hooks]] entry's name")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    envfile.load()  # ./.env, under the environment
    if args.command in setup.COMMANDS:
        return setup.run(args)
    try:
        settings = load_settings(args.config, data_dir=args.data_dir)
        if args.command == "status":
            return status(settings)
        if args.command == "audit":
            return audit(settings, args.since, args.json)
        if args.command in ("backup", "restore"):
            return backup_or_restore(settings, args.command, args.dir)
        if args.command == "eval":
            return run_eval(args, settings)
        if args.command == "email":
            from channels.email.login import login

            return login(settings)
        if args.command == "hooks":
            from bot.ops.hooks_cli import hooks_command

            return hooks_command(settings, args.action, args.name)
        require_llm(settings)
    except FAILURES as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    with lazy.starting():  # fewer collections until the channels connected
        return _run(args, settings)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "chat":
        _log_to_file(settings)
        return _serve(settings, ["terminal"], _reloader(args))
    from bot.app import configured_channels

    channels = configured_channels(settings)
    if not channels:
        print(NO_CHANNEL, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    _quiet_per_request()
    redact.install(settings)
    return _serve(settings, channels, _reloader(args))


def _reloader(args: argparse.Namespace) -> Callable[[], Settings]:
    """Read the settings again, as at start (SIGHUP: the config file may have changed)."""
    return functools.partial(load_settings, args.config, data_dir=args.data_dir)


def _serve(
    settings: Settings, channels: list[str], reload: Callable[[], Settings] | None = None
) -> int:
    from bot.store.backup import running

    for line in startup.warnings(settings, channels):  # valid, but cannot work as meant
        log.warning(line)

    try:
        with running(settings.data_dir):
            return asyncio.run(serve(settings, channels, reload))
    except FAILURES as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2


def is_this_node(settings: Settings, node: str) -> bool:
    """A node id is this machine's: SWITCHBOARD_NODE_ID, else the host name before a pid."""
    if settings.node_id:
        return node == settings.node_id
    return node.rsplit("-", 1)[0] == socket.gethostname() or node.startswith("pid ")


def _has_data(settings: Settings) -> bool:
    """A PostgreSQL database is there to be read (or unreachable: said in one line)."""
    return settings.database_url is not None or settings.db_path.exists()


def status(settings: Settings) -> int:
    from bot.ledger.report import full_status
    from bot.store.core import Store

    if not _has_data(settings):
        print(
            f"No Switchboard data in {settings.data_dir} yet (start `switchboard chat` or "
            "`switchboard run`)."
        )
        return 0
    store = Store(settings.database, readonly=True)
    try:
        print(full_status(store, functools.partial(is_this_node, settings), settings.data_dir))
    finally:
        store.close()
    return 0


def audit(settings: Settings, since: str | None, as_json: bool) -> int:
    from bot.ledger.audit import parse_duration, report
    from bot.store.core import MissingTable, Store

    try:
        parse_duration(since or "0")
    except ValueError as exc:
        print(f"switchboard audit: --since: {exc}", file=sys.stderr)
        return 2
    if not _has_data(settings):  # --json prints lines only, so this goes to stderr
        print(f"No Switchboard data in {settings.data_dir} yet.", file=sys.stderr)
        return 0
    store = Store(settings.database, readonly=True)
    try:
        text = report(store, since, as_json)
    except MissingTable:  # a data dir no version with the audit log has opened yet
        text = "" if as_json else "No audit lines yet."
    finally:
        store.close()
    if text:
        print(text)
    return 0


def backup_or_restore(settings: Settings, command: str, where: Path) -> int:
    from bot.store import backup

    sqlite = settings.database_url is None
    if command == "backup":
        count = backup.backup(settings.data_dir, where, sqlite=sqlite)
        print(f"Backed up {settings.data_dir} to {where} ({count} files).")
    else:
        count = backup.restore(where, settings.data_dir, sqlite=sqlite)
        print(f"Restored {where} into {settings.data_dir} ({count} files).")
    if not sqlite:
        print(backup.pg_line(command, where, str(settings.database)))
    return 0


async def serve(
    settings: Settings, channels: list[str], reload: Callable[[], Settings] | None = None
) -> int:
    from bot.app import App
    from bot.settle import parked_report, settle
    from channels.terminal import TerminalChannel

    app = App(settings, channels)
    await _build(app)
    for channel in app.channels:
        if isinstance(channel, TerminalChannel):  # a piped script waits for its answers
            channel.settle = functools.partial(settle, app)
            channel.leftovers = functools.partial(parked_report, app)
            app.serve_http = False
    try:
        await app.start()
    except SettingsError:  # the HTTP port cannot be bound
        await app.stop()
        raise
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, done.set)
    if reload is not None:
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGHUP, functools.partial(_reload, app, reload))
    waits = [asyncio.create_task(done.wait())]
    waits += [asyncio.create_task(c.closed.wait()) for c in app.channels if c.closed is not None]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in waits:
        task.cancel()
    await app.stop()
    return 0


async def _build(app: App) -> None:
    """Build the app; a node starting over after losing its lease (bot/leadership.py) waits
    for the database instead of giving up, and restarts the same way when it loses it."""
    from bot.leadership import REJOIN_VARIABLE, restart_process
    from bot.store.migrations import DatabaseUnreachable

    while True:
        try:
            app.build()
            break
        except DatabaseUnreachable as exc:
            if not os.environ.get(REJOIN_VARIABLE):
                raise
            log.warning("%s; trying again in 1 s", exc)
            await asyncio.sleep(1.0)
    app.node.restart = restart_process


def _reload(app: App, reload: Callable[[], Settings]) -> None:
    """SIGHUP: apply what may change while running (the daily budget, the prices)."""
    try:
        settings = reload()
    except SettingsError as exc:
        log.error("reload refused, the running settings stay: %s", exc)
        return
    app.apply(settings)


def _log_to_file(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=settings.data_dir / "switchboard.log",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    _quiet_per_request()
    redact.install(settings)


#: loggers that write a line per request at INFO: the HTTP client of the model SDKs logs
#: every model call (`HTTP Request: POST .../v1/messages "HTTP/1.1 200 OK"`), ~0.1 ms of
#: CPU and ~150 bytes of log each, a million lines a million messages; their warnings stay
PER_REQUEST = ("httpx", "httpx2")


def _quiet_per_request() -> None:
    for name in PER_REQUEST:
        logging.getLogger(name).setLevel(logging.WARNING)
