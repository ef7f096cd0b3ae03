"""Benchmark: 10,000 persisted triggers (issue 5).

    .venv/bin/python tests/bench/bench_triggers.py [--triggers 10000] [--due 1000]

1. Setup (not measured): a data dir gets 10,000 triggers through the engine's own
   `create` — crons, heartbeats, far-off alarms, on_event and on_idle watchers — of
   which 1,000 are alarms (send a message to the terminal target) that will all be due
   in the same second. Their persisted next run time is set a few seconds ahead.
2. Measured, in a fresh `python` process: start-up (process start to `App.start()`
   returned, imports included), resident memory after start-up and at the end (and its
   peak), then firing lateness of the 1,000 due alarms: the moment each run was claimed
   in `trigger_runs` (same transaction as its outbox message) minus its fire time.

Targets: start-up <= 3 s, <= 150 MB resident, lateness p99 <= 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ENV = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "bench"}


def _settings(data_dir: Path):  # type: ignore[no-untyped-def]
    from config.settings import load_settings

    return load_settings(
        None, {**ENV, "SWITCHBOARD_DATA_DIR": str(data_dir), "SWITCHBOARD_HOME": "terminal"}
    )


# -- 1. setup ----------------------------------------------------------------------------
async def setup(data_dir: Path, total: int, due: int) -> list[str]:
    from bot.app import App
    from bot.triggers import build_spec
    from tests.kits.app_kit import Recorder

    app = App(_settings(data_dir), [])
    app.build()
    app.add_channel(Recorder())
    await app.start()
    far = time.time() + 30 * 86400
    due_ids = []
    try:
        for i in range(total):
            kind = i % 10
            if i < due:
                config = {"at": _iso(far), "action_type": "send_message"}
                spec = build_spec("at_time", config, f"alarm {i}")
            elif kind < 5:
                spec = build_spec("scheduled", {"cron": f"{i % 60} {i % 24} * * *"}, f"cron {i}")
            elif kind < 7:
                spec = build_spec("heartbeat", {"interval_seconds": 3600 + i}, f"beat {i}")
            elif kind < 8:
                spec = build_spec("at_time", {"at": _iso(far + i)}, f"later {i}")
            elif kind < 9:
                config = {"event_pattern": "worker.completed", "filter": {"agent_id": f"w{i}"}}
                spec = build_spec("on_event", config, f"event {i}")
            else:
                spec = build_spec("on_idle", {"idle_seconds": 86400, "watch_agent": "nobody"}, "x")
            row = app.triggers.create(spec, "coordinator", None, "terminal")
            if i < due:
                due_ids.append(row.job_id)
    finally:
        await app.stop()
    return due_ids


def _iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat()


def make_due(db_path: Path, job_ids: list[str], when: float) -> None:
    """All `job_ids` due at `when`, through APScheduler's job store API."""
    from datetime import UTC, datetime

    from tests.kits.trigger_kit import BatchedJobStore, BlockingScheduler

    store = BatchedJobStore(db_path)
    store.start(BlockingScheduler(), "default")
    moment = datetime.fromtimestamp(when, UTC)
    for job_id in job_ids:
        job = store.lookup_job(job_id)
        assert job is not None
        job.next_run_time = moment
        store.update_job(job)
    store.shutdown()


# -- 2. measured (child process) ---------------------------------------------------------
async def measure(data_dir: Path, due: int, due_at: float, launched: float) -> dict[str, float]:
    from bot.app import App
    from tests.kits.app_kit import Recorder

    imported = time.time()
    app = App(_settings(data_dir), [])
    app.build()
    app.add_channel(Recorder())
    await app.start()
    started = time.time()
    engine_start = _time_engine_start(app)
    rss_start = _status("VmRSS")
    deadline = due_at + 60
    try:
        while _claimed(app, due_at) < due and time.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        lateness = sorted(
            at - float(key)
            for at, key in app.store.db.execute(
                "SELECT at, fire_key FROM trigger_runs WHERE outcome = 'fired'"
            )
        )
    finally:
        await app.stop()
    return {
        "startup_s": started - launched,
        "imports_s": imported - launched,
        "app_start_s": started - imported,
        "engine_start_s": engine_start,
        "rss_after_start_mb": rss_start,
        "rss_end_mb": _status("VmRSS"),
        "rss_peak_mb": _status("VmHWM"),
        "fired": len(lateness),
        "lateness_p50_ms": 1000 * lateness[len(lateness) // 2] if lateness else -1,
        "lateness_p99_ms": 1000 * lateness[int(len(lateness) * 0.99) - 1] if lateness else -1,
        "lateness_max_ms": 1000 * lateness[-1] if lateness else -1,
    }


def _time_engine_start(app) -> float:  # type: ignore[no-untyped-def]
    """The trigger engine's own start-up over the 10,000 rows (stop, start again)."""
    app.triggers.stop()
    t = time.perf_counter()
    app.triggers.start()
    return time.perf_counter() - t


def _claimed(app, due_at: float) -> int:  # type: ignore[no-untyped-def]
    row = app.store.db.execute("SELECT COUNT(*) FROM trigger_runs WHERE outcome = 'fired'")
    return int(row.fetchone()[0])


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return -1.0


# -- driver ------------------------------------------------------------------------------
def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--triggers", type=int, default=10_000)
    p.add_argument("--due", type=int, default=1_000)
    p.add_argument("--measure", nargs=3, metavar=("DATA_DIR", "DUE_AT", "LAUNCHED"))
    args = p.parse_args()
    if args.measure:
        data_dir, due_at, launched = Path(args.measure[0]), *map(float, args.measure[1:])
        print(json.dumps(asyncio.run(measure(data_dir, args.due, due_at, launched))))
        return
    with tempfile.TemporaryDirectory(prefix="bench-triggers-") as tmp:
        data_dir = Path(tmp) / "data"
        t = time.time()
        due_ids = asyncio.run(setup(data_dir, args.triggers, args.due))
        print(f"setup: {args.triggers} triggers created in {time.time() - t:.1f}s")
        due_at = float(int(time.time()) + 10)  # a second boundary after start-up
        make_due(data_dir / "switchboard.db", due_ids, due_at)
        launched = time.time()
        cmd = [
            sys.executable,
            __file__,
            "--due",
            str(args.due),
            "--measure",
            str(data_dir),
            str(due_at),
            str(launched),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
    report(figures, args.triggers, args.due)


def report(f: dict[str, float], total: int, due: int) -> None:
    def mark(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print(f"{total} persisted triggers, {due} due in the same second (fired: {f['fired']:.0f})")
    print(
        f"start-up       {f['startup_s']:.2f} s      target <= 3 s    {mark(f['startup_s'] <= 3)}"
    )
    print(
        f"               = interpreter + imports {f['imports_s']:.2f} s + App build and start "
        f"{f['app_start_s']:.2f} s; the trigger engine's start alone: "
        f"{f['engine_start_s']:.2f} s"
    )
    print(f"machine load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"resident       {f['rss_after_start_mb']:.0f} MB after start, {f['rss_end_mb']:.0f} MB "
        f"at end, peak {f['rss_peak_mb']:.0f} MB   target <= 150 MB  "
        f"{mark(f['rss_peak_mb'] <= 150)}"
    )
    print(
        f"lateness       p50 {f['lateness_p50_ms']:.0f} ms, p99 {f['lateness_p99_ms']:.0f} ms, "
        f"max {f['lateness_max_ms']:.0f} ms   target p99 <= 250 ms  "
        f"{mark(0 <= f['lateness_p99_ms'] <= 250)}"
    )


if __name__ == "__main__":
    main()
