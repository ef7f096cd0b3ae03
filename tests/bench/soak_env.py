"""The soak bot's environment (tests/bench/bench_soak.py): the settings of a busy team's
bot against the fakes, and what `--census` and `--slow-disk` add to it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.bench.soak_servers import mcp_config

HERE = Path(__file__).resolve().parents[2]


def bot_env(tmp: Path, port: int, retention: float, fakes: list[dict[str, str]]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "SLACK_"))}
    for part in fakes:
        env |= part
    return env | {
        "PYTHONPATH": str(HERE),
        "SWITCHBOARD_CONFIG": str(mcp_config(tmp / "switchboard.toml", tmp / "mcp-calls.jsonl")),
        "SWITCHBOARD_DATA_DIR": str(tmp / "var"),
        "SWITCHBOARD_HTTP_PORT": str(port),
        "SWITCHBOARD_RETENTION": f"{retention:.0f}s",
        "SWITCHBOARD_PRUNE_CRON": "* * * * *",
        "SWITCHBOARD_EVENTS_MAX_BYTES": str(4 * 1024 * 1024),
        # a worker lives until the driver answers it ~2 s later, so at 80/s ~10 are active,
        # and a backlog of a few seconds makes it hundreds: a worker the bot refuses is
        # answered with the refusal (the soak counts those), not run
        "SWITCHBOARD_MAX_WORKERS": "256",
        "SWITCHBOARD_STREAMING": "off",
        "SWITCHBOARD_HOME": "slack:C000",
    }


def census_env(tmp: Path, minutes: float) -> dict[str, str]:
    """The bot's environment for an object census every `minutes` (soak_census.py)."""
    boot = HERE / "tests" / "bench" / "census_boot"
    return {
        "PYTHONPATH": f"{boot}{os.pathsep}{HERE}",
        "SOAK_CENSUS_FILE": str(tmp / "census.jsonl"),
        "SOAK_CENSUS_SECONDS": str(minutes * 60),
    }


def slow_disk_env(tmp: Path, ms: float) -> dict[str, str]:
    """The bot's environment for a data dir whose fsyncs take `ms` (tests/bench/slow_disk.c)."""
    shim = tmp / "slow_disk.so"
    source = HERE / "tests" / "bench" / "slow_disk.c"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(source), "-ldl"],
                   check=True)  # fmt: skip
    return {"LD_PRELOAD": str(shim), "SLOWDISK_PREFIX": str(tmp / "var"),
            "SLOWDISK_MS": f"{ms:.0f}"}  # fmt: skip
