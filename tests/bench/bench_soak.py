"""Soak: `switchboard run` under a busy team's steady traffic; does anything grow, and is
every message answered exactly once?

    .venv/bin/python tests/bench/bench_soak.py [--minutes 30] [--messages N] [--rate 20]
        [--postgres] [--no-email] [--retention-days 7] [--sample 10] [--profile SECONDS]
        [--census MINUTES] [--slow-disk MS]

Starts the real `python -m bot run` as a process against the fake Slack (Socket Mode),
the fake Discord (gateway + REST), the fake model, a real dovecot (mail delivered over
LMTP, read by the bot over IMAP) with the SMTP relay it answers through, and the test MCP
server, and drives it (tests/bench/soak_traffic.py): mentions that open new Slack
threads (thousands of conversations) and replies in recent ones, Discord mentions, mail,
Slack file shares the bot downloads, workers that ask a question (park) and are answered a
few seconds later (resume, publish), workers whose gated tool call waits for Bob's Approve
click or `approve` reply, and delayed triggers the coordinator schedules that fire. The
fakes and the driver run in this process, the bot in its own.

The month is compressed by its clock of retention: the run stands for 30 days, and
retention is scaled with it (`--retention-days 7` of a 30-minute run is 7 minutes), with
the leader's pruning every minute (SWITCHBOARD_PRUNE_CRON), so the run crosses several
retention windows and the data dir must level off. The bot's own wall clock is real:
channel keep-alives and retry timers run as they do in production. `--messages N` stops
after N messages (the minutes then default to N / rate).

Every `--sample` seconds it records the bot's resident memory and open files
(/proc/<pid>), its asyncio tasks (/metrics), the database, WAL and data-dir size (on
disk, as `du` counts it, the WAL left out: it is judged by its largest), the pickup
latency of a probe mention (posted -> its model request arrives), the p99 pickup
of every message sent since the last sample and the backlog (answers still owed). After
the last message it waits for the answers owed, then checks each message was answered
exactly once (the soak reads every post and mail as it comes; the fakes keep only their
newest rows, KEEP_ROWS). It prints the samples, the counts
by kind, the rate taken, CPU-ms per message in the bot and in the fakes (this process,
dovecot), the projection to a million messages, the slope of each sample after warm-up
(the first third), and last a line `PASS ...` with the slopes, or `FAIL ...` naming what
grows or what was not answered exactly once. With `--census MINUTES` the bot also takes an
object census that often (tests/bench/soak_census.py: Python's objects by type, the largest
containers and who holds them) and the run prints what grew after warm-up. With
`--slow-disk MS` every fsync of the bot under its data dir waits MS milliseconds first
(tests/bench/slow_disk.c, built with gcc and preloaded into the bot alone). With
`--postgres` it lists the largest tables at the end: heap, TOAST, indexes, dead rows, HOT.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

from bot.store.growth import tree_bytes  # noqa: E402
from tests.bench.bench_start import healthy, rss_mb, until  # noqa: E402
from tests.bench.soak_census import summary  # noqa: E402
from tests.bench.soak_env import bot_env, census_env, slow_disk_env  # noqa: E402
from tests.bench.soak_profile import py_spy  # noqa: E402
from tests.bench.soak_servers import (  # noqa: E402
    MailWorld,
    cpu_seconds,
    database,
    dovecot_cpu,
    mail_world,
    postgres_cpu,
)
from tests.bench.soak_traffic import Answers, Ledger, Model, Traffic  # noqa: E402
from tests.bench.soak_verdict import Sample, db_sizes, metrics, pg_tables, verdict  # noqa: E402
from tests.email.servers import _children, free_port  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic  # noqa: E402
from tests.fakes.discord_api import FakeDiscord  # noqa: E402
from tests.fakes.kept import Kept  # noqa: E402
from tests.fakes.slack_api import BOT_USER, FakeSlack  # noqa: E402

MONTH_DAYS = 30
#: what the fakes keep: the model's newest requests (each a whole prompt, ~70 KB parsed),
#: and of each fake Slack and Discord record (posts, calls, envelopes...) its newest rows.
#: Kept all, this process reached 5.3 GB in 90 minutes (the model's) and 2.7 GB in 75
#: minutes at 65/s (the rest); the soak reads the posts as they come, ~600 in a sample
KEEP_CALLS, KEEP_ROWS = 1_000, 10_000
#: after the last message, how long the run waits for answers still owed
DRAIN_SECONDS = 90


def drive(traffic: Traffic, rate: float, limit: int, stop: threading.Event) -> None:
    """`rate` messages a second, owed by the clock: the time spent sending is counted (a
    fixed sleep between ticks offered 85/s when 90 were asked)."""
    rng, tick, debt, last = random.Random(33), 0.05, 0.0, time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        debt, last = min(debt + rate * (now - last), rate), now  # a stall is not made up at once
        while debt >= 1 and traffic.ledger.sent < limit:
            traffic.one(rng)
            debt -= 1
        traffic.due()
        time.sleep(tick)


def pickups(traffic: Traffic, model: Model, start: int) -> tuple[float, int]:
    """p99 (ms) of sent -> first model request (it names the tag) over the tags sent
    since index `start`, and the next start."""
    ledger = traffic.ledger
    tags = ledger.order[start:]
    now = time.monotonic()  # one not yet picked up counts as waiting until now
    waits = [(model.arrived.get(tag, now) - ledger.sent_at[tag]) * 1000 for tag in tags]
    p99 = statistics.quantiles(waits, n=100)[98] if len(waits) >= 2 else float("nan")
    return p99, start + len(tags)


def by_kind(ledger: Ledger, arrived: dict[str, float]) -> str:
    """Sent -> first model request, p50 and p99 by kind of message (those that reached it)."""
    waits: dict[str, list[float]] = {}
    for tag, kind in ledger.kind_of.items():
        if tag in arrived and tag in ledger.sent_at:
            waits.setdefault(kind, []).append((arrived[tag] - ledger.sent_at[tag]) * 1000)
    parts = []
    for kind, found in sorted(waits.items()):
        if len(found) >= 2:
            cuts = statistics.quantiles(found, n=100)
            parts.append(f"{kind} {cuts[49]:.0f} / {cuts[98]:.0f}")
    return ", ".join(parts)


def probe(slack: FakeSlack, model: Model, k: int) -> float:
    token = f"{k}x"
    sent = time.monotonic()
    slack.post(f"<@{BOT_USER}> probe-{token} how are things", channel="CPROBE")
    with contextlib.suppress(TimeoutError):
        until(lambda: token in model.probes, timeout=30)
        return (model.probes[token] - sent) * 1000
    return float("nan")


@dataclass
class Run:
    """The bot's process and everything the run reads while it goes."""

    proc: subprocess.Popen[bytes]
    port: int
    data: Path
    pg_url: str | None
    traffic: Traffic
    model: Model
    world: MailWorld | None
    samples: list[Sample]
    slack: FakeSlack
    began: float = 0.0
    slack_calls0: Counter[str] = field(default_factory=Counter)  # before the traffic began
    cpu_then: tuple[float, float, int] = (0.0, 0.0, 0)  # bot's, fakes' CPU s, sent: last sample

    def bot_cpu(self) -> float:
        """The bot and the processes it runs (the MCP server), in CPU seconds."""
        return sum(cpu_seconds(p) for p in [self.proc.pid, *_children(self.proc.pid)])

    def fakes_cpu(self) -> float:
        return time.process_time() + dovecot_cpu(self.world)


def sample(run: Run, slack: FakeSlack, k: int, start: int, owed: int) -> tuple[Sample, int]:
    db, wal = db_sizes(run.data, run.pg_url)
    p99, start = pickups(run.traffic, run.model, start)
    tasks, lag = metrics(
        run.port, "switchboard_asyncio_tasks", "switchboard_event_loop_lag_seconds"
    )
    s = Sample(
        time.monotonic() - run.began, rss_mb(run.proc.pid),
        len(os.listdir(f"/proc/{run.proc.pid}/fd")), tasks, db, wal,
        tree_bytes(run.data) / 1e6 - wal, probe(slack, run.model, k), p99, owed, lag * 1e3,
    )  # fmt: skip  # data: on disk, the WAL left out (its sawtooth is judged by its largest)
    run.samples.append(s)
    now = (run.bot_cpu(), run.fakes_cpu(), run.traffic.ledger.sent)  # CPU ms a message since
    then, run.cpu_then = run.cpu_then, now
    bot, fakes = ((now[i] - then[i]) * 1e3 / max(now[2] - then[2], 1) for i in (0, 1))
    print(f"{s.t / 60:6.1f}  {s.rss:8.1f} {s.fds:4d} {s.tasks:6.0f} {s.db:7.1f} {s.wal:7.1f} "
          f"{s.data:8.1f} {s.pickup_ms:10.1f} {s.p99_ms:8.0f} {s.lag_ms:6.0f} {s.backlog:7d} "
          f"{now[2]:8d} {run.model.calls:8d} {bot:6.1f} {fakes:6.1f}", flush=True)  # fmt: skip
    return s, start


def measure(run: Run, slack: FakeSlack, args: argparse.Namespace, found: Answers) -> str | None:
    """Sample until the minutes are up or the messages are sent; None, or why it failed."""
    print("   min    RSS MB  fds  tasks   db MB  wal MB  data MB  pickup ms  p99 ms lag ms  backlog"
          "     sent    calls bot ms fakes ms")  # fmt: skip
    start, ledger = 0, run.traffic.ledger
    for k in itertools.count():
        done = ledger.sent >= args.messages
        if time.monotonic() - run.began >= args.minutes * 60 or done:
            return None
        time.sleep(max(0.0, run.began + k * args.sample - time.monotonic()))
        owed = len(ledger.owed) - sum(found.update().values())
        _, start = sample(run, slack, k, start, owed)
        gc.freeze()  # the ledger keeps every message sent: no full collection pauses the fakes
        if run.proc.poll() is not None:
            args.keep = True
            return f"FAIL the bot exited ({run.proc.returncode}); log: {run.data.parent}/bot.log"
    return None


def drain(run: Run, found: Answers) -> float:
    """Wait for the answers still owed (answering parked workers, approving calls as they
    come); returns when the last answer arrived."""
    ledger, last, count = run.traffic.ledger, time.monotonic(), -1
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        run.traffic.due()
        once, missing, _ = ledger.check(found.update())
        if once + len(missing) != count:
            count, last = once + len(missing), time.monotonic()
        if not missing:
            break
        time.sleep(0.2)
    return last


def report(run: Run, found: Answers, cpu: tuple[float, ...], ended: float) -> list[str]:
    """Print the counts, the rate, CPU per message and the projection; the failures."""
    ledger = run.traffic.ledger
    once, missing, extra = ledger.check(found.update())
    seconds = max(ended - run.began, 1e-9)
    bot_ms, fakes_ms, server_ms = (c * 1000 / max(ledger.sent, 1) for c in cpu)
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(ledger.kinds.items()))
    print(f"routed {ledger.sent} messages ({kinds}); {run.model.calls} model calls; "
          f"{run.model.folded} reached the model folded with others into one call")  # fmt: skip
    print(f"answered exactly once: {once} of {len(ledger.owed)}, {len(run.model.refused)} of "
          f"them by a refusal to start a worker; missing {len(missing)} {missing[:8]}; more "
          f"than once or wrong {len(extra)} {extra[:8]}")  # fmt: skip
    rate = ledger.sent / seconds
    load = os.getloadavg()
    print(f"taken: {rate:.1f} messages/s over {seconds / 60:.1f} min; CPU per message: bot "
          f"{bot_ms:.1f} ms, fakes + driver + dovecot {fakes_ms:.1f} ms"
          f"{f', PostgreSQL server {server_ms:.1f} ms' if run.pg_url else ''}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; a million messages at this rate: "
          f"{1e6 / rate / 3600:.1f} h")  # fmt: skip
    calls = run.slack.counted - run.slack_calls0
    per = ", ".join(f"{m} {n / max(ledger.sent, 1):.2f}" for m, n in calls.most_common(6))
    archived = run.traffic.discord.archived.total
    posts, discord = run.slack.posts, run.traffic.discord
    print(f"Discord threads archived after their quiet day: {archived}; this process (the "
          f"fakes and the driver): RSS {rss_mb(os.getpid()):.0f} MB, keeping {len(posts)} of "
          f"{posts.total} Slack posts, {len(run.slack.envelopes)} envelopes, "
          f"{len(discord.messages)} Discord messages")  # fmt: skip
    agents = run.data / "agents"
    kept = [n for n in os.listdir(agents) if not n.startswith(".")] if agents.is_dir() else []
    retired = tree_bytes(agents / ".retired") / 1e3
    cuts, held = metrics(run.port, "switchboard_wal_cuts", "switchboard_wal_cut_seconds")
    print(f"agents' folders kept: {len(kept)}; ended workers folded into agents/.retired: "
          f"{retired:.0f} KB; WAL cuts {cuts:.0f}, holding the writers {held:.1f} s")  # fmt: skip
    print(f"Slack API calls per routed message: {sum(calls.values()) / max(ledger.sent, 1):.2f}"
          f" ({per})")  # fmt: skip
    print(f"pickup by kind, p50 / p99 ms: {by_kind(ledger, run.model.arrived)}")
    failed = []
    if missing:
        failed.append(f"{len(missing)} never answered")
    if extra:
        failed.append(f"{len(extra)} answered more than once or wrongly")
    return failed


def soak(args: argparse.Namespace) -> str:
    model = Model()
    fake = FakeAnthropic(model).start()
    fake.keep = KEEP_CALLS  # this process must stay flat too: its pauses are the bot's delays
    slack, discord = FakeSlack().start(), FakeDiscord().start()
    slack.bound(KEEP_ROWS)
    discord.bound(KEEP_ROWS)
    scale = MONTH_DAYS * 86_400 / (args.minutes * 60)  # simulated seconds per real second
    retention = args.retention_days * 86_400 / scale
    discord.minute = 60 / scale  # its threads archive after a simulated day of quiet
    tmp = Path(tempfile.mkdtemp(prefix="sb-soak-"))
    port = free_port()
    stop = threading.Event()
    with database(args.postgres) as pg_url, mail_world(args.email) as world:
        fakes = [fake.env(), slack.env(), discord.env(), world.env() if world else {}]
        env = bot_env(tmp, port, retention, fakes)
        if pg_url:
            env["SWITCHBOARD_DATABASE_URL"] = pg_url
        if args.census:
            env |= census_env(tmp, args.census)
        if args.slow_disk:
            env |= slow_disk_env(tmp, args.slow_disk)
        traffic = Traffic(slack, discord, world.send if world else None)  # before it connects
        log = (tmp / "bot.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "run"], cwd=HERE, env=env, stdout=log, stderr=log
        )
        run = Run(proc, port, tmp / "var", pg_url, traffic, model, world, [], slack)
        mails = world.handler.accepted if world else Kept[object]()
        mails.keep = KEEP_ROWS  # the relay's mails as the fakes' records (the bot's answers)
        found = Answers(slack, discord, mails)
        driver = threading.Thread(
            target=drive, args=(traffic, args.rate, args.messages, stop), daemon=True
        )
        try:
            until(lambda: healthy(port), timeout=60)
            time.sleep(2)  # the email channel's first IMAP login, the MCP server's start
            profiler = py_spy(proc.pid, args.profile, tmp)
            cpu0 = (run.bot_cpu(), run.fakes_cpu(), postgres_cpu(pg_url))
            run.began, run.slack_calls0 = time.monotonic(), slack.counted.copy()
            driver.start()
            print(f"soak: {args.minutes:g} min standing for {MONTH_DAYS} days (x{scale:.0f}); "
                  f"retention {retention:.0f} s; {args.rate:g} messages/s; "
                  f"{'PostgreSQL' if pg_url else 'SQLite'}; "
                  f"{'with' if world else 'no'} email; data {tmp}", flush=True)  # fmt: skip
            failed = measure(run, slack, args, found)
            if failed:
                return failed
            stop.set()
            driver.join(10)
            ended = drain(run, found)
            now = (run.bot_cpu(), run.fakes_cpu(), postgres_cpu(pg_url))
            cpu = tuple(n - c for n, c in zip(now, cpu0, strict=True))
            unanswered = report(run, found, cpu, ended)
            if args.census:
                print("\n".join(summary(tmp / "census.jsonl")), flush=True)
            if pg_url:
                print("PostgreSQL's largest tables:", *pg_tables(pg_url), sep="\n")
            if profiler is not None:
                profiler.wait(timeout=args.profile + 60)
                print(f"profile: {tmp / 'profile.txt'}")
        finally:
            stop.set()
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            proc.kill()
            for server in (fake, slack, discord):
                server.stop()
            if not args.keep and not args.profile:
                shutil.rmtree(tmp, ignore_errors=True)
    line = verdict(run.samples, retention, args.minutes)
    if unanswered:
        line = ("FAIL " + "; ".join(unanswered) + "; " + line.removeprefix("PASS ")
                .removeprefix("FAIL "))  # fmt: skip
    return line


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=None, help="default 30, or N/rate")
    parser.add_argument("--messages", type=int, default=None, help="stop after N messages")
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--no-email", dest="email", action="store_false",
                        help="no dovecot; the rest of the traffic as ever")  # fmt: skip
    parser.add_argument("--retention-days", type=float, default=7.0)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--profile", type=float, default=0.0, help="py-spy the bot this many s")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and the log")
    parser.add_argument(
        "--census",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="an object census of the bot this often; prints what grew after warm-up",
    )
    parser.add_argument(
        "--slow-disk",
        type=float,
        default=0.0,
        metavar="MS",
        help="every fsync of the bot under its data dir waits this long (a slow disk)",
    )
    args = parser.parse_args(argv)
    if args.minutes is None:
        args.minutes = args.messages / args.rate / 60 if args.messages else 30.0
    if args.messages is None:
        args.messages = sys.maxsize
    line = soak(args)
    print(line, flush=True)
    return line


if __name__ == "__main__":
    sys.exit(0 if main().startswith("PASS") else 1)
