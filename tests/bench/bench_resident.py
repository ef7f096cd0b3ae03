"""Where the resident memory of `switchboard run` at rest goes, by package.

    .venv/bin/python tests/bench/bench_resident.py [--trace] [--top N]

Starts `python -m bot run` against the fake Slack and the fake model (Slack only, the
default configuration; as tests/bench/bench_start.py does) with an import hook that reads
the process's resident memory (/proc/self/statm) before and after each module's body runs:
a module's own growth is its total less its submodules'. Once Slack connected and the
process is at rest (the model's SDK preloaded, +5 s), it prints, by top-level package in
the order the start first imported them, the MB each added and how many modules (and
whether the main thread loaded them before the connection or the preload thread after),
the anthropic SDK by part, and the anonymous and file-backed memory of the whole process
(/proc/PID/smaps_rollup). What the hook cannot name (heaps, buffers, threads' stacks) is
the difference between the sum and VmRSS. With `--trace`, instead: a second start under
tracemalloc (which makes the process ~70% larger), Python's own allocations at rest by
the package of the innermost frame.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

from tests.bench.bench_start import (  # noqa: E402
    IDLE_SECONDS,
    at_rest,
    compile_tree,
    fakes,
    free_port,
    rss_mb,
    until,
)

#: runs in the bot's process: the import hook, and a thread that writes what it saw to
#: $LEAN_OUT once the file $LEAN_OUT.now exists
BOOT = r"""
import importlib.abc, json, os, sys, threading, time
out = os.environ["LEAN_OUT"]
def kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE") // 1024
seen, nested = [], threading.local()
class Measured(importlib.abc.Loader):
    def __init__(self, inner): self.inner = inner
    def create_module(self, spec): return self.inner.create_module(spec)
    def exec_module(self, module):
        stack = nested.__dict__.setdefault("stack", [])
        start = kb(); stack.append(0)
        try:
            self.inner.exec_module(module)
        finally:
            total = kb() - start; inner = stack.pop()
            if stack: stack[-1] += total
            seen.append((module.__name__, total - inner, threading.current_thread().name))
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if sys.meta_path[0] is not self:  # first again, before the SDK's index finder
            sys.meta_path.remove(self)
            sys.meta_path.insert(0, self)
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                if hasattr(spec.loader, "exec_module"):
                    spec.loader = Measured(spec.loader)
                return spec
        return None
if os.environ.get("LEAN_TRACE"):
    import tracemalloc
else:
    sys.meta_path.insert(0, Finder())
def report():
    while not os.path.exists(out + ".now"):
        time.sleep(0.2)
    result = {"start_kb": START, "imports": seen}
    if os.environ.get("LEAN_TRACE"):
        stats = tracemalloc.take_snapshot().statistics("filename")
        result["traced"] = [(s.traceback[0].filename, s.size) for s in stats]
    with open(out, "w") as f:
        json.dump(result, f)
START = kb()
threading.Thread(target=report, daemon=True).start()
from bot.cli import main
sys.exit(main(["run"]))
"""

OURS = ("bot", "agents", "channels", "config")


def measure(trace: bool) -> tuple[dict[str, object], float, dict[str, int]]:
    """One start at rest: what the hook wrote, VmRSS, smaps_rollup's kB fields."""
    with fakes(False) as (env, slack, config):
        data = Path(tempfile.mkdtemp(prefix="sb-resident-"))
        (data / "switchboard.toml").write_text(config)
        out = data / "imports.json"
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "SLACK_"))}
        full |= env | {
            "PYTHONPATH": str(HERE),
            "SWITCHBOARD_DATA_DIR": str(data / "var"),
            "SWITCHBOARD_CONFIG": str(data / "switchboard.toml"),
            "SWITCHBOARD_HTTP_PORT": str(free_port()),
            "LEAN_OUT": str(out),
        }
        if trace:
            full |= {"LEAN_TRACE": "1", "PYTHONTRACEMALLOC": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT], cwd=HERE, env=full, stdout=subprocess.DEVNULL,
            stderr=(data / "bot.log").open("w"),
        )  # fmt: skip
        try:
            until(lambda: slack.open_sockets > 0)
            at_rest(proc.pid)
            time.sleep(IDLE_SECONDS)
            rss = rss_mb(proc.pid)
            rollup = Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines()[1:]
            fields = {line.split(":")[0]: int(line.split()[1]) for line in rollup}
            Path(f"{out}.now").touch()
            until(lambda: out.exists() and out.stat().st_size > 0, timeout=60)
            time.sleep(0.5)  # the write finished
            return json.loads(out.read_text()), rss, fields
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            shutil.rmtree(data, ignore_errors=True)


def group(name: str) -> str:
    top = name.split(".")[0]
    return f"{top} (ours)" if top in OURS else top


def sdk_part(name: str) -> str:
    """`types.beta`, `resources.organization`, `lib (rest)`, `(core)`..."""
    first, second = [*name.split("."), "", ""][1:3]
    if first in ("types", "resources") and second.startswith(("beta", "organization")):
        return f"{first}.{'beta' if second.startswith('beta') else 'organization'}"
    return f"{first} (rest)" if first in ("types", "resources", "lib") else "(core)"


def print_imports(seen: dict[str, object], rss: float, smaps: dict[str, int], top: int) -> None:
    imports: list[tuple[str, int, str]] = seen["imports"]  # type: ignore[assignment]
    kb: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    threads: dict[str, str] = {}
    for name, grown, thread in imports:
        kb[group(name)] += grown
        count[group(name)] += 1
        threads.setdefault(group(name), "start" if thread == "MainThread" else "preload")
    start = int(seen["start_kb"]) / 1024  # type: ignore[call-overload]
    print(f"at rest: VmRSS {rss:.1f} MB; the interpreter before any import {start:.1f} MB")
    print(
        f"  anonymous {smaps['Anonymous'] / 1024:.1f} MB, file-backed "
        f"{(smaps['Rss'] - smaps['Anonymous']) / 1024:.1f} MB "
        f"(shared with other processes {smaps['Shared_Clean'] / 1024:.1f} MB), "
        f"PSS {smaps['Pss'] / 1024:.1f} MB"
    )
    named = sum(kb.values()) / 1024
    print(f"  grown while importing {named:.1f} MB; heaps, buffers, threads (the rest) ", end="")
    print(f"{rss - start - named:.1f} MB")
    print(f"by package, in the order first imported (those over 0.25 MB; top {top}):")
    order = list(dict.fromkeys(group(name) for name, _, _ in imports))
    biggest = {name for name, _ in kb.most_common(top)}
    for name in order:
        if name in biggest and kb[name] > 256:
            print(f"  {name:26} {kb[name] / 1024:6.1f} MB {count[name]:6} modules  {threads[name]}")
    sdk: collections.Counter[str] = collections.Counter()
    sdk_count: collections.Counter[str] = collections.Counter()
    for name, grown, _ in imports:
        if name.split(".")[0] == "anthropic":
            sdk[sdk_part(name)] += grown
            sdk_count[sdk_part(name)] += 1
    print("the model's SDK (anthropic) by part:")
    for part, grown in sdk.most_common():
        print(f"  {part:26} {grown / 1024:6.1f} MB {sdk_count[part]:6} modules")


def print_traced(seen: dict[str, object], top: int) -> None:
    by: collections.Counter[str] = collections.Counter()
    for filename, size in seen["traced"]:  # type: ignore[attr-defined]
        if "site-packages/" in filename:
            key = filename.split("site-packages/")[1].split("/")[0]
        elif filename.startswith(str(HERE)):
            key = f"{Path(filename).relative_to(HERE).parts[0]} (ours)"
        elif filename.startswith("<frozen importlib"):
            key = "the import system (code objects, module dicts)"
        else:
            key = Path(filename).name
        by[key] += size
    print(f"tracemalloc at rest: {sum(by.values()) / 2**20:.1f} MB of Python allocations")
    for key, size in by.most_common(top):
        print(f"  {key:48} {size / 2**20:6.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="tracemalloc by package")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    compile_tree(HERE)
    seen, rss, smaps = measure(args.trace)
    if args.trace:
        print_traced(seen, args.top)
    else:
        print_imports(seen, rss, smaps, args.top)


if __name__ == "__main__":
    main()
