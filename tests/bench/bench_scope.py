"""The cost of the scope check per tool call, with and without it, in one run.

    .venv/bin/python tests/bench/bench_scope.py

The app is built as `switchboard run` builds it (store, people, file owners, the
scope policy from the settings). One agent's toolbox is made twice over the same
tools: once with the scope guard (agents/tools/scope_guard.py) in front of every call, once
without. Both run the same calls, alternating in rounds: reading a file of the
agent's own workspace, a file a person sent in this conversation (an ownership row in
the store), a listing of the shared files area (filtered by ownership), and the
guard alone on a `schedule` deliver_to and a `read_channel` target in
SWITCHBOARD_TARGETS. Printed: p50/p99 per call in microseconds, and the difference.
(The listing filters by ownership inside the file tool, so both sides of the
`list_files files` row include that filter; the guard adds its own check on top.)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents.loop.step import Effects, Step  # noqa: E402
from agents.services import AgentInfo  # noqa: E402
from agents.tools.toolbox import Toolbox  # noqa: E402
from bot.core.messages import Target  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.kits.app_kit import Recorder, make_settings, running_app  # noqa: E402

N = 2000
ROUNDS = 5
CONV = "terminal"
SENT = "files/0123456789abcdef/report.csv"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(box: Toolbox, name: str, args: dict[str, Any], step: Step) -> float:
    t0 = time.perf_counter()
    result = await box.call(name, args, step)
    spent = (time.perf_counter() - t0) * 1e6
    assert not result.is_error and result.approval is None, result.text
    return spent


async def run() -> None:
    fake = FakeAnthropic(lambda call: [text("ok")]).start()
    data = Path(tempfile.mkdtemp())
    settings = make_settings(data, fake, SWITCHBOARD_TARGETS="slack:COPS,email:ops@example.com")
    async with running_app(settings, [Recorder()]) as app:
        info = AgentInfo("coordinator", "coordinator", CONV, "coordinator/terminal")
        tools = [t for make in app.services.tool_factories for t in make(info)]
        guarded = Toolbox(tools, guard=app.services.guard(info))
        bare = Toolbox(tools)
        (data / SENT).parent.mkdir(parents=True)
        (data / SENT).write_text("a,b\n1,2\n")
        app.human.file_owners.add(CONV, [SENT])
        app.human.people.spoke(CONV, "ann", "terminal:ann")  # as the human node records it
        step = Step("coordinator", CONV, Target("terminal"), Effects(), info.workspace)
        await bare.call("write_file", {"path": "notes.md", "content": "hello\n"}, step)
        calls = [
            ("read_file", {"path": "notes.md"}),
            ("read_file", {"path": SENT}),
            ("list_files", {"path": "files"}),
        ]
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(ROUNDS):
            for label, box in (("without", bare), ("with", guarded)):
                for name, args in calls:
                    key = (label, f"{name} {args['path']}")
                    for _ in range(N // ROUNDS):
                        samples.setdefault(key, []).append(await timed(box, name, args, step))
        guard = app.services.guard(info)
        assert guard is not None
        alone = {
            "schedule deliver_to email:ops@": ("schedule", {"deliver_to": "email:ops@example.com"}),
            "read_channel slack:COPS": ("read_channel", {"target": "slack:COPS"}),
        }
        for label, (name, args) in alone.items():
            for _ in range(N):
                t0 = time.perf_counter()
                assert await guard(name, args, step) is None
                samples.setdefault(("guard alone", label), []).append(
                    (time.perf_counter() - t0) * 1e6
                )
    fake.stop()
    report(samples)


def report(samples: dict[tuple[str, str], list[float]]) -> None:
    print(f"scope check per tool call, us ({N} calls each, {ROUNDS} alternating rounds)")
    print(f"{'call':<50}{'without p50/p99':>18}{'with p50/p99':>18}{'added p50':>11}")
    names = sorted({name for label, name in samples if label != "guard alone"})
    for name in names:
        off, on = samples[("without", name)], samples[("with", name)]
        print(
            f"{name:<50}{percentile(off, 0.5):>8.1f} /{percentile(off, 0.99):>7.1f}"
            f"{percentile(on, 0.5):>10.1f} /{percentile(on, 0.99):>7.1f}"
            f"{statistics.median(on) - statistics.median(off):>11.1f}"
        )
    for (label, name), values in samples.items():
        if label == "guard alone":
            p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
            print(f"guard alone: {name:<30} p50 {p50:.1f} us, p99 {p99:.1f} us")


if __name__ == "__main__":
    asyncio.run(run())
