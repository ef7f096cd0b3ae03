"""Deployment files: the systemd unit in config/ and the Procfile."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "config" / "switchboard.service"


def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_the_unit_runs_switchboard_run_with_its_data_dir_and_port() -> None:
    unit = _unit()
    service = unit["Service"]
    assert service["ExecStart"].endswith("/switchboard run")
    assert service["RestartPreventExitStatus"] == "2"  # settings errors are not retried
    assert service["KillSignal"] == "SIGTERM"
    assert service["User"] != "root"
    env = dict(
        line.split("=", 1)
        for line in UNIT.read_text().splitlines()
        if line.startswith("Environment=")
        for line in [line.removeprefix("Environment=")]
    )
    assert env["SWITCHBOARD_DATA_DIR"] == "/var/lib/switchboard"
    assert env["SWITCHBOARD_HTTP_HOST"] == "127.0.0.1" and env["SWITCHBOARD_HTTP_PORT"]
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    """`systemd-analyze verify` on the unit, its ExecStart pointed at this checkout's
    interpreter (verify insists the binary exists)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:  # not a systemd host: the configparser test above still ran
        return
    text = UNIT.read_text().replace(
        "/opt/switchboard/.venv/bin/switchboard run", f"{sys.executable} -m bot run"
    )
    unit = tmp_path / "switchboard.service"
    unit.write_text(text)
    done = subprocess.run(
        [analyze, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60
    )
    # verify exits 0 even for unknown keys or bad values; it names them with the file
    problems = [line for line in (done.stdout + done.stderr).splitlines() if str(unit) in line]
    assert done.returncode == 0, done.stderr
    assert problems == [], problems


def test_the_procfile_runs_a_web_process() -> None:
    assert (ROOT / "Procfile").read_text().strip() == "web: switchboard run"
