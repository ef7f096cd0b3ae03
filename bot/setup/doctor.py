"""`switchboard doctor`: every check of a working install, one line each, with a fix
line under each failure; exit status 1 when anything is wrong.

The offline checks (settings, data dir, database, the dashboard's exposure) also run
at the end of `switchboard init`; the online ones (tokens, Slack scopes, the model)
are in bot/setup/probes.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from config.checks import is_loopback
from config.settings import Settings, SettingsError, is_postgres, load_settings, require_llm

#: the data dir needs at least this much free space
MIN_FREE_BYTES = 200 * 1024 * 1024
#: an fsync slower than this is a slow disk (a local SSD: ~1-5 ms; an SD card or network
#: storage: hundreds): said, not failed (docs/running-for-months.md, "A slow disk")
SLOW_SYNC_SECONDS = 0.2
OK, FAIL = "✓", "✗"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def passed(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def failed(name: str, detail: str, fix: str) -> Check:
    return Check(name, False, detail, fix)


def show(check: Check, out: TextIO) -> None:
    print(f"{OK if check.ok else FAIL} {check.name}: {check.detail}", file=out)
    if not check.ok and check.fix:
        print(f"  fix: {check.fix}", file=out)


def settings_check(config: Path | None, data_dir: Path | None) -> tuple[Check, Settings | None]:
    try:
        settings = load_settings(config, data_dir=data_dir)
        require_llm(settings)
    except SettingsError as exc:
        fix = "set it in .env or the config file (docs/settings.md)"
        return failed("settings", str(exc), fix), None
    where = config or os.environ.get("SWITCHBOARD_CONFIG") or "the environment"
    if where == "the environment" and Path("config/switchboard.toml").exists():
        where = "config/switchboard.toml and the environment"
    return passed("settings", f"read from {where}"), settings


def data_dir_check(settings: Settings) -> Check:
    path = settings.data_dir
    probe = path if path.exists() else next((p for p in path.parents if p.exists()), Path("/"))
    if not os.access(probe, os.W_OK | os.X_OK):
        return failed(
            "data dir",
            f"{path} is not writable by this user",
            f"chown it to the bot's user or set SWITCHBOARD_DATA_DIR (now {path})",
        )
    if path.exists() and stat.S_IMODE(path.stat().st_mode) & 0o007:
        return failed(
            "data dir",
            f"{path} is open to every user of this machine "
            f"(mode {stat.S_IMODE(path.stat().st_mode):o})",
            f"chmod 700 {path}",
        )
    free = shutil.disk_usage(probe).free
    if free < MIN_FREE_BYTES:
        return failed(
            "data dir",
            f"only {free // 2**20} MB free under {probe}",
            "free space there or point SWITCHBOARD_DATA_DIR at a larger disk",
        )
    made = "" if path.exists() else " (made at the first start)"
    slow = _slow_sync(path) if path.exists() else None
    said = f"; slow disk: an fsync took {slow:.2f} s, answers wait for it at times" if slow else ""
    return passed("data dir", f"{path}{made}, {free // 2**30} GB free{said}")


def _slow_sync(path: Path) -> float | None:
    """Seconds an fsync of a small file in the data dir took, when over SLOW_SYNC_SECONDS."""
    try:
        fd, name = tempfile.mkstemp(dir=path, prefix=".doctor-", suffix=".tmp")
    except OSError:
        return None
    try:
        os.write(fd, b"switchboard doctor\n")
        started = time.monotonic()
        os.fsync(fd)
        took = time.monotonic() - started
    except OSError:
        return None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)
    return took if took > SLOW_SYNC_SECONDS else None


def database_check(settings: Settings) -> Check:
    where = settings.database
    if is_postgres(where):
        return _postgres_check(str(where))
    db = Path(where)
    if not db.exists():
        return passed("database", f"SQLite {db} (made at the first start)")
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as exc:
        return failed("database", f"SQLite {db}: {exc}", "restore a backup (switchboard restore)")
    return passed("database", f"SQLite {db}, schema version {version}")


def _postgres_check(url: str) -> Check:
    try:
        import psycopg
    except ModuleNotFoundError:
        return failed(
            "database",
            "SWITCHBOARD_DATABASE_URL is set but the PostgreSQL driver (psycopg) is not installed",
            "pip install 'switchboard[postgres]' (in the bot's venv)",
        )
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            version = conn.info.server_version
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return failed(
            "database",
            f"cannot reach PostgreSQL: {reason}",
            "check SWITCHBOARD_DATABASE_URL and that the server runs",
        )
    return passed("database", f"PostgreSQL {version // 10000}.{version % 10000}")


def dashboard_check(settings: Settings) -> Check:
    host, token = settings.http_host, settings.dashboard_token is not None
    if not settings.serves_http:
        return passed("dashboard", "off (no HTTP port set)")
    where = f"{host}:{settings.listen_port}"
    if is_loopback(host):
        return passed("dashboard", f"on {where}, this machine only")
    if not token:
        return failed(
            "dashboard",
            f"on {where} with no SWITCHBOARD_DASHBOARD_TOKEN: open to the network",
            "set SWITCHBOARD_DASHBOARD_TOKEN (openssl rand -hex 24) or bind 127.0.0.1",
        )
    cookie = "" if settings.cookie_secure else "; set SWITCHBOARD_COOKIE_SECURE=true behind HTTPS"
    return passed("dashboard", f"on {where}, behind its token{cookie}")


def secrets_check(env: Path = Path(".env")) -> list[Check]:
    """`.env` holds tokens: only its owner may read it."""
    if not env.is_file():
        return []
    mode = stat.S_IMODE(env.stat().st_mode)
    if mode & 0o077:
        return [failed(".env", f"{env} is readable by others (mode {mode:o})", f"chmod 600 {env}")]
    return [passed(".env", f"{env}, mode {mode:o}")]


def offline(settings: Settings) -> list[Check]:
    checks = [data_dir_check(settings), database_check(settings), dashboard_check(settings)]
    return [*checks, *secrets_check()]


Online = Callable[[Settings], Awaitable[list[Check]]]


def run(
    config: Path | None,
    data_dir: Path | None,
    out: TextIO = sys.stdout,
    online: bool = True,
) -> int:
    """Print every check; 0 when all passed, 1 otherwise."""
    first, settings = settings_check(config, data_dir)
    show(first, out)
    if settings is None:
        return 1
    checks = offline(settings)
    for check in checks:
        show(check, out)
    if online:
        from bot.setup.probes import probe_all

        for check in asyncio.run(probe_all(settings)):
            checks.append(check)
            show(check, out)
    bad = [c for c in checks if not c.ok]
    print(
        f"{len(bad)} problem{'s' if len(bad) != 1 else ''} found." if bad else "All is well.",
        file=out,
    )
    return 1 if bad else 0
