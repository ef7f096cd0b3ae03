"""Drive `switchboard` as a person would: a real subprocess, its stdin and stdout."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fresh_json(code: str) -> Any:
    """The last line a fresh interpreter running `code` (in the checkout) printed, as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


class Switchboard:
    """`python -m bot ... <command>` with line-based stdin/stdout."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, root: Path = ROOT) -> None:
        full_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(
                ("SWITCHBOARD_", "ANTHROPIC_", "SLACK_", "DISCORD_", "EMAIL_", "IMAP_", "SMTP_")
            )
        }
        full_env.update(env)
        full_env["PYTHONPATH"] = str(root)  # another tree: an older release's code
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", *args],
            cwd=cwd,
            env=full_env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, fragment: str, timeout: float = 15.0) -> str:
        """Wait for an output line containing `fragment`; return it."""
        for line in self.lines:
            if fragment in line:
                return line
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line with {fragment!r}; got:\n" + "\n".join(self.lines))
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            self.lines.append(line)
            if fragment in line:
                return line

    def settle(self, seconds: float) -> list[str]:
        """Collect output for `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.lines.append(self._queue.get(timeout=left))
            except queue.Empty:
                break
        return self.lines

    def finish(self, timeout: float = 15.0) -> tuple[int, list[str]]:
        """Wait for a command that ends by itself; its exit status and every line."""
        code = self.proc.wait(timeout)
        deadline = time.monotonic() + 5
        while self._pump_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        while not self._queue.empty():
            self.lines.append(self._queue.get())
        return code, self.lines

    def _pump_alive(self) -> bool:
        return self._pump_thread.is_alive()

    def kill(self) -> None:
        """kill -9: no chance to clean up."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def quit(self) -> int:
        if self.proc.poll() is None:
            self.send("/quit")
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)


class Run:
    """`switchboard run` over `<workdir>/data`, started again and again: killed (SIGKILL,
    no chance to clean up) or stopped (SIGTERM)."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = env
        self.workdir = workdir
        self.proc: Switchboard | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.proc.pid if self.proc is not None else None

    def start(self) -> None:
        data = ["--data-dir", str(self.workdir / "data")]
        self.proc = Switchboard([*data, "run"], self.env, self.workdir)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.proc.terminate()
            try:
                self.proc.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.proc.kill()
            self.proc = None


def chat(workdir: Path, env: dict[str, str], root: Path = ROOT, data: str = "data") -> Switchboard:
    """`switchboard chat` over `<workdir>/<data>`, run from `workdir` (the code of `root`)."""
    return Switchboard(["--data-dir", str(workdir / data), "chat"], env, workdir, root)


COMMAND_TIMEOUT = 60  # seconds for a `run_command`


def run_command(
    args: list[str], env: dict[str, str], cwd: Path, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """`python -m bot <args>` run to its end in a clean environment plus `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "PORT"))}
    clean.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env=clean,
        text=True,
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
        **kwargs,
    )
