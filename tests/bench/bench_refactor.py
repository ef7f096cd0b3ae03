"""Routing throughput and pickup latency of two source trees, measured in one run.

    .venv/bin/python tests/bench/bench_refactor.py BEFORE_TREE [AFTER_TREE] [--rounds N]

For the store refactor (issue 13): BEFORE_TREE is a worktree at the commit before
it (`git worktree add --detach /tmp/before <commit>`), AFTER_TREE defaults to this
tree. Each measurement runs `tests/bench/bench_core.py`'s own `routing()` and
`pickup()` of that tree in a fresh process, the trees alternating round by round
(A B A B ...) so the machine's load falls on both alike. Prints the medians, the ratio
of the medians, and the median of the ratios of each round's pair (measured minutes
apart, so a machine whose load drifts skews it least); the target is routed
messages/s after >= 95% of before. `messages/CPU-s` times the same loop in the
process's CPU seconds, the steadier figure on a shared machine. `--routing-only`
skips pickup, for more rounds; `--restart` adds bench_core's restart with 1,000 parked
workers (seconds to ready, resident MB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
PROBE = """
import asyncio, json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {tree!r})
from tests.bench import bench_core as b
from tests.fakes.anthropic_api import FakeAnthropic, text
try:
    from tests.kits.app_kit import Recorder, inbound, make_settings, running_app
except ImportError:  # a tree from before the kits moved to tests/kits/
    from tests.kit import Recorder, inbound, make_settings, running_app

async def routing_cpu(n):
    # bench_core.routing's loop, timed in CPU seconds of this process: the other
    # processes of a busy machine slow the wall clock, far less this figure
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    settings = make_settings(Path(tempfile.mkdtemp()), fake)
    async with running_app(settings, [Recorder()]) as app:
        if hasattr(app.llm, "warm"):  # a tree that imports the SDK in a thread at start
            await app.llm.warm()
        app.team.spawn("Parker", "sit", "x", "terminal")
        msgs = [inbound(f"@parker note {{i}}", conversation=f"c{{i % 50}}") for i in range(n)]
        t0 = time.process_time()
        for m in msgs:
            app.human.accept(m)
        elapsed = time.process_time() - t0
        await app.team.stop("Parker")
    fake.stop()
    return n / elapsed

out = {{"rate": asyncio.run(b.routing({n}))}}
out["cpu_rate"] = asyncio.run(routing_cpu({n}))
if {pickup}:
    out["p50_0"], out["p99_0"] = asyncio.run(b.pickup(0, {samples}))
    out["p50_k"], out["p99_k"] = asyncio.run(b.pickup(1000, {samples}))
if {restart}:
    out["restart"], out["restart_rss"] = b.restart()
print(json.dumps(out))
"""
FIGURES = [
    ("rate", "routed messages/s", "{:,.0f}"),
    ("cpu_rate", "routed messages/CPU-s", "{:,.0f}"),
    ("p50_0", "pickup p50, 0 parked (ms)", "{:.2f}"),
    ("p99_0", "pickup p99, 0 parked (ms)", "{:.2f}"),
    ("p50_k", "pickup p50, 1,000 parked (ms)", "{:.2f}"),
    ("p99_k", "pickup p99, 1,000 parked (ms)", "{:.2f}"),
    ("restart", "restart, 1,000 parked (s)", "{:.2f}"),
    ("restart_rss", "restart, 1,000 parked (MB)", "{:.0f}"),
]


def measure(tree: Path, n: int, samples: int, pickup: bool, restart: bool) -> dict[str, float]:
    code = PROBE.format(tree=str(tree), n=n, samples=samples, pickup=pickup, restart=restart)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tree
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=HERE)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--routing-only", action="store_true")
    parser.add_argument("--restart", action="store_true", help="also bench_core's restart()")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for label, tree in (("before", args.before), ("after", args.after)):
            runs[label].append(
                measure(
                    tree.resolve(),
                    args.messages,
                    args.samples,
                    not args.routing_only,
                    args.restart,
                )
            )
            print(f"round {r + 1} {label}: " + json.dumps(runs[label][-1]), flush=True)
    print(f"\nmedians over {args.rounds} alternating rounds")
    print(f"{'':32} {'before':>10} {'after':>10} {'after/before':>13} {'paired':>8}")
    for key, name, fmt in FIGURES:
        if key not in runs["before"][0]:
            continue
        a = statistics.median(x[key] for x in runs["before"])
        b = statistics.median(x[key] for x in runs["after"])
        paired = statistics.median(
            y[key] / x[key] for x, y in zip(runs["before"], runs["after"], strict=True)
        )
        print(f"{name:32} {fmt.format(a):>10} {fmt.format(b):>10} {b / a:>12.1%} {paired:>8.1%}")
    print("target: routed messages/s after >= 95% of before")


if __name__ == "__main__":
    main()
