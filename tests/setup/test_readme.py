"""The README's two commands, as written: the first, in a fresh clone, installs (here:
reuses this venv, so the install step is skipped as on a second run) and talks to the
coordinator (the fake model) through the terminal quick start; the second is what CI
runs. The front page stays short and links only to pages that exist (or are promised)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.proc import ROOT

README = (ROOT / "README.md").read_text()
#: pages other branches write (linked ahead of them)
PROMISED = {"docs/hooks.md", "docs/eval.md"}


def command_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", README, re.S)


def test_exactly_two_commands_and_ci_runs_the_second() -> None:
    chat, test = command_blocks()
    assert chat == "ANTHROPIC_API_KEY=sk-ant-... ./scripts/chat"
    assert test == "./scripts/test"
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("./scripts/test")


def test_the_front_page_is_short_and_its_links_lead_somewhere() -> None:
    assert len(README.splitlines()) <= 250
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", README):
        assert (ROOT / link).exists() or link in PROMISED, link
    headings = re.findall(r"(?m)^#+ .*$", README)
    assert not [h for h in headings if re.search(r"(?i)issue|round|turn \d", h)]
    for page in (ROOT / "docs").glob("*.md"):
        titles = re.findall(r"(?m)^#+ .*$", page.read_text())
        assert not [h for h in titles if re.search(r"(?i)\bissue \d|round two", h)], page


def _clone(tmp_path: Path) -> Path:
    """A fresh clone of this checkout's HEAD, with a `.venv` that is this one (stamped as
    `scripts/_setup.sh` stamps it, so nothing is installed again)."""
    # the test command runs in a clone (CI clones afresh); git comes with it
    assert shutil.which("git") and (ROOT / ".git").exists(), "run the suite in a git clone"
    clone = tmp_path / "switchboard"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=60)
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    wrapper = bin_dir / "switchboard"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bot "$@"\n')
    wrapper.chmod(0o755)
    stamp = subprocess.run(
        ["bash", "-c", '{ cat pyproject.toml; echo "."; .venv/bin/python -VV; } | sha256sum'],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    (clone / ".venv" / ".switchboard-stamp").write_text(stamp + "\n")
    return clone


@pytest.mark.slow  # a clone and a chat start: ~30 s on a loaded machine
def test_the_terminal_quick_start_in_a_fresh_clone(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text("Hello! I'm the coordinator.")]
    clone = _clone(tmp_path)
    command = command_blocks()[0].replace("sk-ant-...", "sk-ant-test")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ANTHROPIC_BASE_URL": fake.url,
        "PYTHONPATH": str(clone),  # the clone's code, not this checkout's
    }
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, input="hello\n/help\n",
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Installing" not in done.stderr  # the venv was taken as it is
    assert "[coordinator] Hello! I'm the coordinator." in done.stdout
    assert "[switchboard] Write to me in plain words" in done.stdout  # /help, no model
    assert len(fake.calls) == 1
    assert any("sk-ant-test" in value for value in fake.calls[0].headers.values())  # the key
    assert (clone / "var").is_dir()  # state in ./var, as the quick start says
