"""The acceptance tests' way in: `switchboard run` as a subprocess against the fake
Slack with the HTTP API and the dashboard on a port, and `switchboard audit --json` read
back as an operator reads it."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.kits.ops_kit import free_port
from tests.kits.proc import Switchboard

API_TOKEN = "deploy-notices-0123456789"
DASHBOARD_TOKEN = "an-operator-token-0123456789"


def start(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, port: int, **more: str
) -> Switchboard:
    """`switchboard run` with Slack (Socket Mode), the API and the dashboard on `port`;
    answers posted whole (streamed answers are tests/slack/test_slack_live.py's)."""
    env = {
        **fake.env(), **slack.env("socket"), "SLACK_PACE_SECONDS": "0.02",
        "SWITCHBOARD_STREAMING": "off",
        "SWITCHBOARD_HTTP_PORT": str(port), "SWITCHBOARD_API_TOKEN": API_TOKEN,
        "SWITCHBOARD_DASHBOARD_TOKEN": DASHBOARD_TOKEN, **more,
    }  # fmt: skip
    sockets = slack.open_sockets
    config = tmp_path / "switchboard.toml"
    extra = ["--config", str(config)] if config.exists() else []
    run = Switchboard([*extra, "--data-dir", str(tmp_path / "data"), "run"], env, tmp_path)
    slack.wait_for(lambda s: s.open_sockets == sockets + 1, timeout=30)
    return run


@contextlib.contextmanager
def switchboard_run(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, port: int | None = None, **more: str
) -> Iterator[str]:
    """A running `switchboard run`; its URL. It must stop cleanly on SIGTERM."""
    port = port or free_port()
    run = start(tmp_path, fake, slack, port, **more)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        run.proc.send_signal(signal.SIGTERM)
        code, lines = run.finish(timeout=30)
    assert code == 0 and not any("Traceback" in line for line in lines), lines


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    """`switchboard audit --json`, as an operator reads it."""
    cmd = Switchboard(["--data-dir", str(tmp_path / "data"), "audit", "--json"], {}, tmp_path)
    code, lines = cmd.finish()
    assert code == 0, lines
    return [json.loads(line) for line in lines if line.startswith("{")]
