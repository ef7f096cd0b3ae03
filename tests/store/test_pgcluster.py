"""The throwaway PostgreSQL of tests/kits/pgcluster.py: it serves psycopg, each test gets an
empty database of its own, the faults a test injects behave as a real server's, and no
server or dir outlives the cluster, even when the session that started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from tests.kits.pgcluster import PgCluster, pg_running

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # every test here runs PostgreSQL, some without the fixtures
DB_UNREACHABLE = psycopg.OperationalError


def db_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def wait_until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def processes_on(base: Path) -> str:
    """The command lines of the processes naming the cluster's dir (pgrep -f)."""
    found = subprocess.run(["pgrep", "-af", str(base)], capture_output=True, text=True)
    return found.stdout.strip()


def gone(base: Path, postmaster: int) -> bool:
    return not base.exists() and not alive(postmaster) and not processes_on(base)


def test_a_test_gets_an_empty_database_of_its_own_over_tcp(pg_url: str) -> None:
    assert pg_url.startswith("postgresql://postgres@127.0.0.1:")
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO t VALUES (1, 'one')")
        conn.commit()
        assert conn.execute("SELECT v FROM t").fetchall() == [("one",)]
        assert conn.info.dbname == db_of(pg_url)


def test_databases_are_not_shared_between_tests(pg_cluster: PgCluster, pg_url: str) -> None:
    other = pg_cluster.create_database()
    assert other != db_of(pg_url)
    with psycopg.connect(pg_cluster.url(other)) as conn:
        conn.execute("CREATE TABLE t (id int)")
    pg_cluster.drop_database(other)
    with pytest.raises(DB_UNREACHABLE, match="does not exist"):
        psycopg.connect(pg_cluster.url(other))


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_stop_and_start_keep_committed_data_on_the_same_port(
    pg_cluster: PgCluster, pg_url: str, mode: str
) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE TABLE t (id int)")
        conn.execute("INSERT INTO t SELECT generate_series(1, 1000)")
    port = pg_cluster.port
    pg_cluster.stop(mode)
    assert not pg_cluster.running
    with pytest.raises(DB_UNREACHABLE):
        psycopg.connect(pg_url, connect_timeout=2)
    pg_cluster.start()
    assert pg_cluster.port == port
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (1000,)


def test_a_test_that_leaves_the_server_stopped_does_not_stop_the_next(
    pg_cluster: PgCluster, pg_url: str
) -> None:
    """Under test is pg_url's teardown: it starts the server again and drops the
    database (else this test errors), and the next test's pg_url finds it up."""
    pg_cluster.stop()


def test_terminate_ends_one_backend_session(pg_cluster: PgCluster, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as victim, psycopg.connect(pg_url) as other:
        pid = victim.info.backend_pid
        assert set(pg_cluster.backends(db_of(pg_url))) == {pid, other.info.backend_pid}
        assert pg_cluster.terminate(pid)
        with pytest.raises(DB_UNREACHABLE):
            victim.execute("SELECT 1")
        assert other.execute("SELECT 1").fetchone() == (1,)
    assert not pg_cluster.terminate(pid)  # gone already


def test_no_server_and_no_dir_outlive_the_cluster() -> None:
    with pg_running() as cluster:
        postmaster, base = cluster.pid(), cluster.base
        assert alive(postmaster) and processes_on(base)
        if os.geteuid() == 0:  # initdb and postgres refuse root
            assert base.stat().st_uid != 0
    assert gone(base, postmaster), processes_on(base)


SESSION = """
import sys
from tests.kits.pgcluster import PgCluster
cluster = PgCluster().create()
print(cluster.base, cluster.pid(), flush=True)
sys.stdin.read()
"""


def test_a_killed_test_session_leaves_no_server_and_no_dir() -> None:
    """SIGKILL of the process that started a cluster (a CI timeout, a kill -9): no
    teardown runs, and the cluster goes all the same."""
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert session.stdout is not None
    base, pid = session.stdout.readline().split()
    assert alive(int(pid))
    session.send_signal(signal.SIGKILL)
    session.wait(timeout=10)
    wait_until(lambda: gone(Path(base), int(pid)))


def durability(cluster: PgCluster) -> dict[str, str]:
    with cluster.connect() as conn:
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings"
            " WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit')"
        ).fetchall()
    return dict(rows)


def test_a_durable_cluster_syncs_as_production_does_and_the_default_does_not(
    pg_cluster: PgCluster,
) -> None:
    assert durability(pg_cluster) == {
        "fsync": "off",
        "full_page_writes": "off",
        "synchronous_commit": "on",
    }
    with pg_running(durable=True) as durable:
        assert durability(durable) == dict.fromkeys(
            ("fsync", "full_page_writes", "synchronous_commit"), "on"
        )


def test_the_unix_socket_url_reaches_the_same_database(pg_cluster: PgCluster, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (v text)")
        conn.execute("INSERT INTO t VALUES ('over tcp')")
    unix = pg_cluster.url(db_of(pg_url), unix=True)
    assert "127.0.0.1" not in unix
    with psycopg.connect(unix) as conn:
        assert conn.info.host == str(pg_cluster.base)
        assert conn.execute("SELECT v FROM t").fetchall() == [("over tcp",)]
