"""The soak's servers beside the fakes (tests/bench/bench_soak.py): a real dovecot the
bot reads by IMAP with the SMTP relay it answers through, PostgreSQL when asked, the MCP
server whose `restart_*` tools need approval, and CPU time read from /proc for each side."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.bench.soak_traffic import mail_to_bot
from tests.email.servers import Dovecot, RelayHandler, SmtpRelay, _children, make_ca, stamp

HERE = Path(__file__).resolve().parents[2]
MCP_SERVER = HERE / "tests" / "servers" / "mcp_ops.py"
BOT = "bot@localhost"
#: people who mail the bot: each stays under its loop guard (60 mails an hour from one
#: sender, channels/email/safety.py) up to 8 mails a second in all
PEOPLE = 500
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class MailWorld:
    """dovecot (LMTP in, IMAP to the bot) and the SMTP relay the bot sends through; the
    relay keeps what it accepted (the bot's answers) instead of delivering it on."""

    dovecot: Dovecot
    handler: RelayHandler
    relay: SmtpRelay
    loop: asyncio.AbstractEventLoop

    def env(self) -> dict[str, str]:
        return self.dovecot.env(BOT, self.relay.port, "@localhost")

    def send(self, n: int) -> None:
        """Mail m<n> from one of the team, as their provider's MX hands it to the bot's
        mailbox."""
        sender = f"p{n % PEOPLE}@localhost"
        self.dovecot.deliver(sender, [BOT], stamp(mail_to_bot(n, sender, BOT), sender))


@contextlib.contextmanager
def mail_world(enabled: bool) -> Iterator[MailWorld | None]:
    if not enabled:
        yield None
        return
    dovecot = Dovecot(*make_ca())
    dovecot.start()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    handler = RelayHandler(dovecot, deliver=False)
    relay = asyncio.run_coroutine_threadsafe(SmtpRelay(handler).start(), loop).result(10)
    try:
        yield MailWorld(dovecot, handler, relay, loop)
    finally:
        asyncio.run_coroutine_threadsafe(relay.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        dovecot.cleanup()


@contextlib.contextmanager
def database(postgres: bool) -> Iterator[str | None]:
    """A PostgreSQL database of its own for the run (None: the bot's embedded SQLite)."""
    if not postgres:
        yield None
        return
    from tests.kits.pgcluster import pg_running

    with pg_running() as cluster:
        yield cluster.url(cluster.create_database())


def mcp_config(path: Path, calls: Path) -> Path:
    """A TOML config naming the test MCP server (stdio) whose `restart_*` tools are gated."""
    path.write_text(
        "[[mcp_servers]]\n"
        'name = "ops"\n'
        f'command = "{sys.executable}"\n'
        f'args = ["{MCP_SERVER}", "stdio"]\n'
        f'env = {{ CALLS_FILE = "{calls}" }}\n'
        'approval = ["restart_*"]\n'
    )
    return path


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU of a process (and of its reaped children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def dovecot_cpu(world: MailWorld | None) -> float:
    if world is None:
        return 0.0
    with contextlib.suppress(OSError, ValueError):
        return sum(cpu_seconds(pid, children=True) for pid in world.dovecot.family())
    return 0.0


def postgres_cpu(url: str | None) -> float:
    """The PostgreSQL server's CPU seconds so far: its postmaster, its live backends and
    those that ended (autovacuum's workers among them); 0.0 on SQLite."""
    if url is None:
        return 0.0
    import psycopg

    with psycopg.connect(url) as db:
        data = str(db.execute("SHOW data_directory").fetchone()[0])  # type: ignore[index]
    pid = int(Path(data, "postmaster.pid").read_text().split()[0])
    return cpu_seconds(pid, children=True) + sum(cpu_seconds(p) for p in _children(pid))
