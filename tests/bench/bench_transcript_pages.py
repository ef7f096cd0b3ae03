"""What a step's checkpoint writes to SQLite's WAL for a long conversation, the slow
disk's lever (docs/running-for-months.md, "A slow disk"): a worker's research, each
step a thinking block and a tool call, then the tool's result, compacted at the
default budget (24,000 tokens, ~96 KB), saved through the store as the agent loop saves
it (`save_conversation` inside the checkpoint's transaction).

    .venv/bin/python tests/bench/bench_transcript_pages.py [--steps 200]
    .venv/bin/python tests/bench/bench_transcript_pages.py --against /path/to/other/tree

Prints the WAL's pages written per checkpoint (automatic checkpoints off, so the WAL
only grows: frames = pages written), the bytes of the WAL per checkpoint, and the store's
CPU per checkpoint (on the event loop in the bot), each for the tree it runs from.
`--against TREE` runs the same in TREE (main before a change), then here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TREE = Path(os.environ.get("BENCH_TREE") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(TREE))

#: the default compaction budget (config/settings.py compact_at_tokens), in JSON bytes
COMPACT_AT = 24_000 * 4
FRAME = 4096 + 24  # a WAL frame: one page and its header


def step(i: int) -> list[dict[str, Any]]:
    """One step of research: the model's thinking and tool call, then the tool's result."""
    thinking = f"Step {i}: what the last result says and what to look at next. " * 25
    return [
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": thinking, "signature": "EqQBCkYIBxgC" * 30},
            {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "web_fetch",
             "input": {"url": f"https://example.com/report/{i}"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
             "content": f"Result {i}: figures and a table of prices. " * 50}]},
    ]  # fmt: skip


def compacted(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The older half summarised, the recent half kept (agents/memory/compaction.py)."""
    half = len(messages) // 2
    half += half % 2  # a tool call stays with its result
    summary = {"role": "user", "content": "[Summary of the work so far] " + "x" * 2000}
    return [summary, *messages[half:]]


def measure(steps: int) -> None:
    import json

    from bot.store.core import Store

    with tempfile.TemporaryDirectory(prefix="sb-pages-") as tmp:
        path = Path(tmp) / "switchboard.db"
        store = Store(path)
        store.db.execute("PRAGMA wal_autocheckpoint=0")
        wal = path.with_name(path.name + "-wal")
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Research GPU prices"}]
        frames, cpu, sizes = [], [], []
        for i in range(steps):
            messages += step(i)
            if len(json.dumps(messages)) > COMPACT_AT:
                messages = compacted(messages)
            before, t0 = wal.stat().st_size if wal.exists() else 32, time.thread_time()
            with store.tx():
                store.agents.save_conversation("w-alice", "task", messages, "slack:C1/1.0")
            cpu.append(time.thread_time() - t0)
            frames.append((wal.stat().st_size - before) / FRAME)
            sizes.append(len(json.dumps(messages)))
        assert store.agents.load_conversation("w-alice", "task")[0] == messages
        store.close()
    n = len(frames)
    print(f"tree: {TREE}")
    print(f"{n} checkpoints, the transcript {min(sizes) // 1000}-{max(sizes) // 1000} KB "
          f"(mean {sum(sizes) / n / 1000:.0f} KB): WAL pages per checkpoint "
          f"{sum(frames) / n:.1f} ({sum(frames) * FRAME / n / 1000:.0f} KB), the store's CPU "
          f"{sum(cpu) / n * 1000:.2f} ms per checkpoint")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    if args.against is None:
        measure(args.steps)
        return
    here = Path(__file__).resolve()
    for tree in (args.against.resolve(), TREE):
        env = {**os.environ, "BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, str(here), "--steps", str(args.steps)], env=env,
                       cwd=tree, check=True)  # fmt: skip


if __name__ == "__main__":
    main()
