"""A throwaway PostgreSQL cluster for the tests, and its pytest fixtures.

`PgCluster` runs a private cluster from Debian's `postgresql` package (the binaries in
/usr/lib/postgresql/<N>/bin, the newest N; else `initdb` on PATH) under a fresh dir in
/tmp: listening on a free port of 127.0.0.1 and on a unix socket in that dir, trust auth,
durability off (fsync, full-page writes: a test's disk is not under test), or on as in
production with `PgCluster(durable=True)` (the benchmarks). As root it runs as `nobody`
(initdb and postgres refuse root), owning the dir.

Cleanup does not rely on the test session ending well: a reaper process (its own
session, so Ctrl-C and a CI timeout's kill of the process group miss it) waits for
EOF on a pipe from this process, then stops the server (`-m immediate`) and removes
the dir. Closing the pipe is the normal teardown; the death of pytest, even by
SIGKILL, closes it too.

Fixtures: `pg_cluster` (session; started on first use, so only sessions that use
PostgreSQL pay for it) and `pg_url` (a fresh empty database per test, dropped after).
Faults for a test: `pg_cluster.stop()` / `.start()` (same port, data kept),
`.terminate(pid)` of a backend, `.backends(db)` to find one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # psycopg is imported when a test uses PostgreSQL, not at collection
    import psycopg

SUPERUSER = "postgres"
RUN_AS = "nobody"  # when root
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "fsync": "off",
    "full_page_writes": "off",
    # kept on: with fsync off it costs one write() a commit, and an immediate stop
    # (a crash) then loses no committed transaction, as in production
    "synchronous_commit": "on",
    "log_min_messages": "warning",
}
#: production's durability (PostgreSQL's defaults), for figures that mean something
DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}
INITDB = ["--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C"]
# runs as "$0" = the cluster dir, "$@" = pg_ctl (behind runuser when root)
REAPER = 'cat >/dev/null; "$@" stop -D "$0/data" -m immediate >/dev/null 2>&1; rm -rf "$0"'
_names = itertools.count(1)


def bindir() -> Path:
    """Where initdb, pg_ctl and postgres are: Debian's newest, else PATH's."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path is None:
        raise RuntimeError("PostgreSQL is not installed (scripts/test installs `postgresql`)")
    return Path(on_path).parent


def _version(initdb: Path) -> int:
    """16 for /usr/lib/postgresql/16/bin/initdb."""
    name = initdb.parts[-3]
    return int(name) if name.isdigit() else 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    """No PG* variable of the developer's reaches the tools."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"LC_ALL": "C"}


class PgCluster:
    """One private cluster: `create()` it (initdb + start), `close()` it (stop, remove)."""

    def __init__(self, *, durable: bool = False) -> None:
        self.bin = bindir()
        self.settings = SETTINGS | DURABLE if durable else SETTINGS
        # /tmp, not $TMPDIR: `nobody` must reach it, and unix socket paths stay short
        self.base = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))
        self.data = self.base / "data"
        self.port = 0  # chosen just before the first start: less time for another to take it
        self._as = ["runuser", "-u", RUN_AS, "--"] if os.geteuid() == 0 else []
        self._reaper: subprocess.Popen[bytes] | None = None

    def create(self) -> PgCluster:
        if self._as:
            entry = pwd.getpwnam(RUN_AS)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        self._reaper = self._spawn_reaper()
        self._tool("initdb", "-D", self.data, "-U", SUPERUSER, "--auth=trust", *INITDB)
        self._configure()
        self.start()
        return self

    def _spawn_reaper(self) -> subprocess.Popen[bytes]:
        argv = ["sh", "-c", REAPER, str(self.base), *self._as, str(self.bin / "pg_ctl")]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)

    def _tool(self, name: str, *args: object) -> str:
        """Run one of the server's tools as the cluster's owner; its output. In a session
        of its own: the server it starts is no part of the terminal's Ctrl-C."""
        argv = [*self._as, str(self.bin / name), *map(str, args)]
        done = subprocess.run(
            argv, cwd=self.base, env=_env(), capture_output=True, text=True, start_new_session=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr}{self.log()}")
        return done.stdout

    def _configure(self) -> None:
        self.port = free_port()
        lines = [f"{k} = {v}" for k, v in self.settings.items()]
        lines += [f"port = {self.port}", f"unix_socket_directories = '{self.base}'"]
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\n".join(lines) + "\n")

    def start(self) -> None:
        """Start the server (again, on the same port) and wait until it accepts."""
        self._tool("pg_ctl", "start", "-D", self.data, "-l", self.base / "log", "-w", "-t", 60)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast` (clean) or `immediate` (as a crash; recovery at start)."""
        self._tool("pg_ctl", "stop", "-D", self.data, "-m", mode, "-w", "-t", 60)

    @property
    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def pid(self) -> int:
        """The postmaster's pid."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def log(self) -> str:
        path = self.base / "log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def url(self, db: str = "postgres", *, unix: bool = False) -> str:
        """Over TCP on 127.0.0.1, or (`unix`) over the cluster's unix socket."""
        if unix:
            return f"postgresql://{SUPERUSER}@/{db}?host={self.base}&port={self.port}"
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{db}"

    def connect(self, db: str = "postgres") -> psycopg.Connection[Any]:
        import psycopg

        return psycopg.connect(self.url(db), autocommit=True)

    def create_database(self, template: str = "template0") -> str:
        """A fresh database (a copy of `template`); its name."""
        name = f"test_{next(_names)}"
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop it, ending any session still on it."""
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def backends(self, db: str) -> list[int]:
        """The pids of the client sessions on `db` (ours excepted)."""
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (db,),
            ).fetchall()
        return [row[0] for row in rows]

    def terminate(self, pid: int) -> bool:
        """End one backend session, as an administrator or a crash of that backend would."""
        with self.connect() as conn:
            row = conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        return bool(row and row[0])

    def close(self) -> None:
        """Stop the server and remove the dir (the reaper does both); wait for it."""
        if self._reaper is None:
            shutil.rmtree(self.base, ignore_errors=True)
            return
        assert self._reaper.stdin is not None
        self._reaper.stdin.close()
        self._reaper.wait(timeout=90)


@contextlib.contextmanager
def pg_running(*, durable: bool = False) -> Iterator[PgCluster]:
    cluster = PgCluster(durable=durable)
    try:
        yield cluster.create()
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's cluster, started on first use."""
    with pg_running() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh empty database for this test: its URL. Dropped after the test, the
    server started again first if the test left it stopped."""
    name = pg_cluster.create_database()
    yield pg_cluster.url(name)
    if not pg_cluster.running:
        pg_cluster.start()
    pg_cluster.drop_database(name)
