"""Start time and idle memory of `switchboard run`, as a team sees them on a deploy.

    .venv/bin/python tests/bench/bench_start.py [--before TREE] [--rounds N] [--all]

Starts `python -m bot run` as a real process against the fakes (Slack over Socket Mode;
with `--all` also Discord, email on a private dovecot and one MCP server over stdio) and
prints, per configuration:
- start to Slack connected: from the process's spawn to the fake Slack's socket open;
- start to healthy: to the first 200 from `/healthz` (every configured channel up);
- idle RSS: the process's resident memory (VmRSS) at rest, MCP child excluded: once
  healthy and its CPU time has stopped growing (the model SDK's preload done), plus 5 s;
- CPU to connected: the process's user + system CPU seconds (all threads) spent by the
  moment Slack connected: what the start costs whatever the machine's load (the shared
  machine's wall-clock figures move with the other processes on it).
With `--first-answer`, instead: start to first answer, a Slack DM sent the moment the
socket opens and the bot's reply posted (the fake model answers at once): what a deploy
costs someone who was waiting.
Each tree's modules are byte-compiled first, as an install compiles them (this machine sets
PYTHONDONTWRITEBYTECODE: from bare sources every start compiled ~300 of our modules,
~0.35 s of CPU that a deploy does not pay).
With `--before TREE` (a worktree of an earlier commit: `git worktree add --detach
/tmp/before main`) both trees run alternately, round by round, so the machine's load falls
on both alike, and the medians are printed side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

from tests.email.servers import Dovecot, free_port, make_ca  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.fakes.discord_api import FakeDiscord  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

IDLE_SECONDS = 5.0
MCP_CONFIG = """
[[mcp_servers]]
name = "ops"
command = "{python}"
args = ["{server}"]
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def compile_tree(tree: Path) -> None:
    """Byte-compile a tree's packages, as `pip install` does."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    packages = [str(tree / p) for p in ("bot", "agents", "channels", "config")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], env=env, check=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process so far (/proc/PID/stat utime, stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def at_rest(pid: int, timeout: float = 120.0) -> None:
    """Until the process spends under 2% of a core over a second: its start and the
    preloads after it are done (on a loaded machine they take several seconds more)."""
    deadline = time.monotonic() + timeout
    spent = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        spent, before = cpu_seconds(pid), spent
        if spent - before < 0.02:
            return


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def until(check: Callable[[], bool], timeout: float = 180.0) -> float:
    """time.monotonic() when `check()` first held (polled every 5 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(0.005)
    raise TimeoutError(f"not connected within {timeout} s")


@contextlib.contextmanager
def fakes(all_channels: bool) -> Iterator[tuple[dict[str, str], FakeSlack, str]]:
    """The servers a start needs, their settings, and the TOML config text."""
    model = FakeAnthropic(lambda call: [text("ok")]).start()
    slack = FakeSlack().start()
    env = {**model.env(), **slack.env()}
    config = ""
    with contextlib.ExitStack() as stack:
        stack.callback(model.stop)
        stack.callback(slack.stop)
        if all_channels:
            discord = FakeDiscord().start()
            stack.callback(discord.stop)
            dovecot = Dovecot(*make_ca())
            dovecot.start()
            stack.callback(dovecot.cleanup)
            env |= discord.env() | dovecot.env("bot@localhost", free_port(), "@localhost")
            server = HERE / "tests" / "servers" / "mcp_ops.py"
            config = MCP_CONFIG.format(python=sys.executable, server=server)
        yield env, slack, config


def start_once(
    tree: Path, env: dict[str, str], slack: FakeSlack, config: str, ask: bool = False
) -> dict[str, float]:
    data = Path(tempfile.mkdtemp(prefix="sb-start-"))
    (data / "switchboard.toml").write_text(config)
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "SLACK_"))}
    full |= env | {
        "PYTHONPATH": str(tree),
        "SWITCHBOARD_DATA_DIR": str(data / "var"),
        "SWITCHBOARD_CONFIG": str(data / "switchboard.toml"),
        "SWITCHBOARD_HTTP_PORT": str(port),
    }
    before = slack.connections
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run"],
        cwd=tree,
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        connected = until(lambda: slack.connections > before and slack.open_sockets > 0)
        cpu = cpu_seconds(proc.pid)
        if ask:
            return {"answer": first_answer(slack) - started, "cpu": cpu_seconds(proc.pid)}
        up = until(lambda: healthy(port))
        at_rest(proc.pid)
        time.sleep(IDLE_SECONDS)
        return {
            "slack": connected - started,
            "healthy": up - started,
            "rss": rss_mb(proc.pid),
            "cpu": cpu,
        }
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
        proc.kill()
        shutil.rmtree(data, ignore_errors=True)


def first_answer(slack: FakeSlack) -> float:
    posted = len(slack.method_calls("chat.postMessage"))
    slack.post("hello", channel="D1", channel_type="im")
    return until(lambda: len(slack.method_calls("chat.postMessage")) > posted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an earlier tree, run alternately")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="only the all-channels run")
    parser.add_argument("--first-answer", action="store_true", help="Slack only: to a reply")
    args = parser.parse_args()
    trees = {"after": HERE} if args.before is None else {"before": args.before, "after": HERE}
    for tree in trees.values():
        compile_tree(tree)
    for label, every in (("Slack only", False), ("all channels + 1 MCP server", True)):
        if (args.all and not every) or (args.first_answer and every):
            continue
        figures: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        with fakes(every) as (env, slack, config):
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    figures[name].append(start_once(tree, env, slack, config, args.first_answer))
        print(f"{label} ({args.rounds} rounds, medians)")
        for name, runs in figures.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            if args.first_answer:
                print(
                    f"  {name:6}  start to first answer {med['answer']:.2f} s   "
                    f"CPU to first answer {med['cpu']:.2f} s"
                )
                continue
            print(
                f"  {name:6}  start to Slack connected {med['slack']:.2f} s   "
                f"start to healthy {med['healthy']:.2f} s   idle RSS {med['rss']:.0f} MB   "
                f"CPU to connected {med['cpu']:.2f} s"
            )


if __name__ == "__main__":
    main()
