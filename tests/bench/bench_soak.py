"""Soak: `switchboard run` under a busy team's steady traffic; does anything grow?

    .venv/bin/python tests/bench/bench_soak.py [--minutes 30] [--rate 20] [--postgres]
        [--retention-days 7] [--sample 10]

Starts the real `python -m bot run` as a process against the fake Slack (Socket Mode),
the fake Discord (gateway + REST) and the fake model, and drives it: mentions that open
new Slack threads (thousands of conversations) and replies in recent ones, Discord
mentions, workers spawned that ask a question (park) and are answered a few seconds later
(resume, publish), and delayed triggers the coordinator schedules that fire.

The month is compressed by its clock of retention: the run stands for 30 days, and
retention is scaled with it (`--retention-days 7` of a 30-minute run is 7 minutes), with
the leader's pruning every minute (SWITCHBOARD_PRUNE_CRON), so the run crosses several
retention windows and the data dir must level off. The bot's own wall clock is real:
channel keep-alives and retry timers run as they do in production.

Every `--sample` seconds it records the bot's resident memory and open files
(/proc/<pid>), its asyncio tasks (/metrics), the database, WAL and data-dir size, and
the pickup latency of a probe mention (posted -> its model request arrives). It prints
the samples, then the slope of each after warm-up (the first third), and last a line
`PASS ...` with the slopes, or `FAIL ...` naming what grows.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

from bot.store.growth import JOURNAL_LIMIT, tree_bytes  # noqa: E402
from tests.bench.bench_start import healthy, rss_mb, until  # noqa: E402
from tests.email.servers import free_port  # noqa: E402
from tests.fakes import discord_payloads as dp  # noqa: E402
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool  # noqa: E402
from tests.fakes.discord_api import FakeDiscord  # noqa: E402
from tests.fakes.slack_api import BOT_USER, FakeSlack  # noqa: E402

MONTH_DAYS = 30
CHANNELS = 20
#: warm-up left out of the slopes: the first third of the samples
WARM = 1 / 3


class Model:
    """The fake model's script, and when each probe's request arrived."""

    def __init__(self) -> None:
        self.probes: dict[str, float] = {}
        self.calls = 0

    def __call__(self, call: Call) -> list[dict[str, Any]]:
        self.calls += 1
        said = call.last_text
        if "probe-" in said:
            token = said.split("probe-", 1)[1].split()[0]
            self.probes.setdefault(token, time.monotonic())
        if call.agent != "coordinator":  # a worker: ask once, then publish the answer
            if "ask_human" in call.all_text and call.tool_results():
                return [tool("publish", result="done: " + said[:40])]
            return [tool("ask_human", question="Blue or green?")]
        if call.tool_results():
            return [text("")]
        if "spawn " in said:
            name = said.split("spawn ", 1)[1].split()[0]
            return [tool("spawn_worker", name=name, task="Ask which colour, then publish.")]
        if "remind me" in said:
            return [tool("schedule", type="delayed", config={"delay_seconds": 3}, action="ping")]
        return [text("ok")]


@dataclass
class Traffic:
    """The team: what it has said, and the answers it owes to parked workers."""

    slack: FakeSlack
    discord: FakeDiscord
    #: the threads still talked in: a thread goes quiet after ~300 newer ones
    threads: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=300))
    answers: deque[tuple[float, str, str, str]] = field(default_factory=deque)
    sent: int = 0
    workers: int = 0
    triggers: int = 0
    ids: Iterator[int] = field(default_factory=itertools.count)

    def one(self, rng: random.Random) -> None:
        n, roll = next(self.ids), rng.random()
        channel = f"C{n % CHANNELS:03d}"
        if roll < 0.15:
            self.discord.say(f"<@{dp.BOT_ID}> discord question {n}")
        elif roll < 0.19:
            ts = self.slack.post(f"<@{BOT_USER}> spawn W{n}", channel=channel)
            self.answers.append((time.monotonic() + 3, channel, ts, f"W{n}"))
            self.workers += 1
        elif roll < 0.20:
            self.slack.post(f"<@{BOT_USER}> remind me {n}", channel=channel)
            self.triggers += 1
        elif roll < 0.55 and self.threads:
            ch, ts = rng.choice(self.threads)
            self.slack.post(f"<@{BOT_USER}> and then {n}", channel=ch, thread_ts=ts)
        else:
            ts = self.slack.post(f"<@{BOT_USER}> question {n}", channel=channel)
            self.threads.append((channel, ts))
        self.sent += 1

    def answer_due(self) -> None:
        while self.answers and self.answers[0][0] <= time.monotonic():
            _, channel, ts, name = self.answers.popleft()
            self.slack.post(f"<@{BOT_USER}> @{name} blue", channel=channel, thread_ts=ts)
            self.sent += 1


@dataclass
class Sample:
    t: float
    rss: float
    fds: int
    tasks: float
    db: float
    wal: float
    data: float
    pickup_ms: float


def drive(traffic: Traffic, rate: float, stop: threading.Event) -> None:
    rng, tick, debt = random.Random(33), 0.05, 0.0
    while not stop.is_set():
        debt += rate * tick
        while debt >= 1:
            traffic.one(rng)
            debt -= 1
        traffic.answer_due()
        time.sleep(tick)


def metric(port: int, name: str) -> float:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        pass
    return float("nan")


def db_sizes(data: Path, pg_url: str | None) -> tuple[float, float]:
    if pg_url is None:
        db = data / "switchboard.db"
        wal = data / "switchboard.db-wal"
        return (
            db.stat().st_size / 1e6 if db.exists() else 0.0,
            wal.stat().st_size / 1e6 if wal.exists() else 0.0,
        )
    import psycopg

    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return (row[0] / 1e6 if row else 0.0), 0.0


def probe(slack: FakeSlack, model: Model, k: int) -> float:
    token = f"{k}x"
    sent = time.monotonic()
    slack.post(f"<@{BOT_USER}> probe-{token} how are things", channel="CPROBE")
    with contextlib.suppress(TimeoutError):
        until(lambda: token in model.probes, timeout=30)
        return (model.probes[token] - sent) * 1000
    return float("nan")


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(least-squares slope per minute, mean) of (seconds, value) points."""
    pts = [(t, v) for t, v in points if v == v]  # NaN left out
    if len(pts) < 3:
        return 0.0, pts[0][1] if pts else 0.0
    mt = sum(t for t, _ in pts) / len(pts)
    mv = sum(v for _, v in pts) / len(pts)
    var = sum((t - mt) ** 2 for t, _ in pts) or 1.0
    return sum((t - mt) * (v - mv) for t, v in pts) / var * 60, mv


#: (field, unit, growth over the measured window that fails: relative, absolute)
LIMITS = {
    "rss": ("MB", 0.10, 8.0),
    "fds": ("", 0.25, 10.0),
    "tasks": ("", 0.25, 25.0),
    "pickup_ms": ("ms", 0.50, 50.0),
    "db": ("MB", 0.25, 2.0),
    "data": ("MB", 0.25, 4.0),
}
DISK = ("db", "data")


def verdict(samples: list[Sample], retention: float, minutes: float) -> str:
    kept = samples[int(len(samples) * WARM) :]
    window = (kept[-1].t - kept[0].t) / 60 if len(kept) > 1 else 0.0
    judged_disk = minutes * 60 >= 3 * retention
    if judged_disk:  # the disk levels off once a retention window has passed, twice
        kept_disk = [s for s in samples if s.t >= 2 * retention]
    growing, figures = [], []
    for name, (unit, rel, absolute) in LIMITS.items():
        rows = kept_disk if name in DISK and judged_disk else kept
        per_min, mean = slope([(s.t, getattr(s, name)) for s in rows])
        figures.append(f"{name} {per_min:+.3g}{unit}/min")
        grew = per_min * window
        if (name not in DISK or judged_disk) and grew > absolute and grew > rel * abs(mean):
            growing.append(f"{name} (+{grew:.3g}{unit} over {window:.1f} min)")
    wal_max = max(s.wal for s in samples)
    figures.append(f"wal max {wal_max:.1f}MB")
    if wal_max * 1e6 > JOURNAL_LIMIT:
        growing.append(f"wal ({wal_max:.1f} MB > {JOURNAL_LIMIT / 1e6:.0f} MB)")
    if not judged_disk:
        figures.append("disk not judged (run < 3 retention windows)")
    return ("FAIL grows: " + ", ".join(growing) + "; " if growing else "PASS ") + ", ".join(figures)


@contextlib.contextmanager
def database(postgres: bool) -> Iterator[str | None]:
    if not postgres:
        yield None
        return
    from tests.kits.pgcluster import pg_running

    with pg_running() as cluster:
        yield cluster.url(cluster.create_database())


def soak(args: argparse.Namespace) -> str:
    model = Model()
    fake = FakeAnthropic(model).start()
    slack, discord = FakeSlack().start(), FakeDiscord().start()
    scale = MONTH_DAYS * 86_400 / (args.minutes * 60)  # simulated seconds per real second
    retention = args.retention_days * 86_400 / scale
    tmp = Path(tempfile.mkdtemp(prefix="sb-soak-"))
    data, port = tmp / "var", free_port()
    samples: list[Sample] = []
    stop = threading.Event()
    with database(args.postgres) as pg_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "SLACK_"))}
        env |= fake.env() | slack.env() | discord.env()
        env |= {
            "PYTHONPATH": str(HERE),
            "SWITCHBOARD_DATA_DIR": str(data),
            "SWITCHBOARD_HTTP_PORT": str(port),
            "SWITCHBOARD_RETENTION": f"{retention:.0f}s",
            "SWITCHBOARD_PRUNE_CRON": "* * * * *",
            "SWITCHBOARD_EVENTS_MAX_BYTES": str(4 * 1024 * 1024),
            "SWITCHBOARD_MAX_WORKERS": "64",
            "SWITCHBOARD_STREAMING": "off",
            "SWITCHBOARD_HOME": "slack:C000",
        }
        if pg_url:
            env["SWITCHBOARD_DATABASE_URL"] = pg_url
        log = (tmp / "bot.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "run"], cwd=HERE, env=env, stdout=log, stderr=log
        )
        traffic = Traffic(slack, discord)
        driver = threading.Thread(target=drive, args=(traffic, args.rate, stop), daemon=True)
        try:
            until(lambda: healthy(port), timeout=60)
            began = time.monotonic()
            driver.start()
            print(f"soak: {args.minutes} min standing for {MONTH_DAYS} days (x{scale:.0f}); "
                  f"retention {retention:.0f} s; {args.rate:g} messages/s; "
                  f"{'PostgreSQL' if pg_url else 'SQLite'}; data {tmp}", flush=True)  # fmt: skip
            print("   min    RSS MB  fds  tasks   db MB  wal MB  data MB  pickup ms  sent  calls")
            for k in itertools.count():
                if time.monotonic() - began >= args.minutes * 60:
                    break
                time.sleep(max(0.0, began + k * args.sample - time.monotonic()))
                db, wal = db_sizes(data, pg_url)
                s = Sample(
                    time.monotonic() - began, rss_mb(proc.pid),
                    len(os.listdir(f"/proc/{proc.pid}/fd")),
                    metric(port, "switchboard_asyncio_tasks"), db, wal,
                    tree_bytes(data) / 1e6, probe(slack, model, k),
                )  # fmt: skip
                samples.append(s)
                print(f"{s.t / 60:6.1f}  {s.rss:8.1f} {s.fds:4d} {s.tasks:6.0f} {s.db:7.1f} "
                      f"{s.wal:7.1f} {s.data:8.1f} {s.pickup_ms:10.1f} {traffic.sent:5d} "
                      f"{model.calls:6d}", flush=True)  # fmt: skip
                if proc.poll() is not None:
                    args.keep = True
                    return f"FAIL the bot exited ({proc.returncode}); log: {tmp / 'bot.log'}"
        finally:
            stop.set()
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            proc.kill()
            for server in (fake, slack, discord):
                server.stop()
            if not args.keep:
                shutil.rmtree(tmp, ignore_errors=True)
    posted = len(slack.method_calls("chat.postMessage"))
    print(f"sent {traffic.sent} messages ({traffic.workers} spawned a worker, "
          f"{traffic.triggers} scheduled a trigger), {model.calls} model calls, "
          f"{posted} Slack posts")  # fmt: skip
    return verdict(samples, retention, args.minutes)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--retention-days", type=float, default=7.0)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and the log")
    line = soak(parser.parse_args(argv))
    print(line, flush=True)
    return line


if __name__ == "__main__":
    sys.exit(0 if main().startswith("PASS") else 1)
