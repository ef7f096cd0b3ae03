"""An object census of the soak's bot (tests/bench/bench_soak.py `--census MINUTES`): what
grows in Python's heap, by type, and which containers are largest and who holds them.

Bench-only, never in the product: bench_soak.py puts tests/bench/census_boot on the bot's
PYTHONPATH, whose `sitecustomize` starts `start()` in `python -m bot run` when
SOAK_CENSUS_FILE is set. Every SOAK_CENSUS_SECONDS a thread collects garbage and appends
one JSON line to the file: per type its count and shallow bytes (of what the collector
tracks: containers and instances; a string or number counts only in its container's
size), the 40 largest containers (dicts, lists, sets, deques; untracked ones found
through their holder) with the attribute or module name that holds each, and asyncio
futures by state. The first
census unfreezes the start's frozen heap (`gc.freeze` in bot/core/lazy.py), which hides
objects from `gc.get_objects`. A census stops the bot for a few seconds (2-10 s in a
busy 2-hour run): the pickup p99 of its sample jumps and Slack's socket may reconnect
(its pong wait is 2.5 s); judge latency on a run without `--census`.

`summary(path)` (run by bench_soak.py at the end) prints what grew between the first
census after warm-up and the last: types by bytes, and containers by length.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

CONTAINERS = (dict, list, set, collections.deque)
#: a container this long or longer is a candidate for the largest
LONG = 300
BIGGEST = 40


def start() -> None:
    """In the bot: census every SOAK_CENSUS_SECONDS into SOAK_CENSUS_FILE, in a thread."""
    path = os.environ["SOAK_CENSUS_FILE"]
    every = float(os.environ.get("SOAK_CENSUS_SECONDS", "600"))

    def run() -> None:
        time.sleep(min(every, 30))  # the start settles first
        while True:
            with open(path, "a") as out:
                out.write(json.dumps(census()) + "\n")
            time.sleep(every)

    threading.Thread(target=run, daemon=True, name="soak-census").start()


def census() -> dict[str, Any]:
    gc.unfreeze()
    gc.collect()
    counts: dict[str, list[int]] = {}
    long: dict[int, Any] = {}
    futures: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        row = counts.setdefault(f"{kind.__module__}.{kind.__qualname__}", [0, 0])
        row[0] += 1
        row[1] += sys.getsizeof(obj)
        if isinstance(obj, CONTAINERS) and len(obj) >= LONG:
            long[id(obj)] = obj
        for inner in gc.get_referents(obj):  # a dict of only strings is not tracked
            if type(inner) in (dict, list, set) and len(inner) >= LONG:
                long.setdefault(id(inner), inner)
        if kind.__name__ == "Future" and hasattr(obj, "cancelled"):
            futures["cancelled" if obj.cancelled() else "done" if obj.done() else "pending"] += 1
    biggest = sorted(long.values(), key=len, reverse=True)[:BIGGEST]
    del long
    return {
        "t": time.time(),
        "counts": counts,
        "big": [{"type": type(o).__name__, "len": len(o), "owner": holder(o)} for o in biggest],
        "futures": dict(futures),
    }


def holder(obj: object) -> str:
    """`module.attr` or `Class.attr` that holds `obj`, or '?'."""
    for ref in gc.get_referrers(obj):
        if isinstance(ref, dict):
            for owner in gc.get_referrers(ref):
                if getattr(owner, "__dict__", None) is ref:
                    attr = next((k for k, v in ref.items() if v is obj), "?")
                    name = (
                        owner.__name__
                        if isinstance(owner, types.ModuleType)
                        else f"{type(owner).__module__}.{type(owner).__qualname__}"
                    )
                    return f"{name}.{attr}"
        for slot in getattr(type(ref), "__slots__", ()):
            if isinstance(slot, str) and getattr(ref, slot, None) is obj:
                return f"{type(ref).__module__}.{type(ref).__qualname__}.{slot}"
    return "?"


def summary(path: Path, warm: float = 1 / 3, top: int = 12) -> list[str]:
    """What grew from the first census after the warm-up share of the run to the last."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if len(rows) < 2:
        return [f"census: {len(rows)} taken, too few to compare"]
    first, last = rows[min(int(len(rows) * warm), len(rows) - 2)], rows[-1]
    minutes = (last["t"] - first["t"]) / 60
    grew = []
    for name, (count, size) in last["counts"].items():
        count0, size0 = first["counts"].get(name, (0, 0))
        grew.append((size - size0, count - count0, count, name))
    grew.sort(reverse=True)

    def total(row: dict[str, Any]) -> float:
        return sum(size for _, size in row["counts"].values()) / 1e6

    lines = [
        f"census: {len(rows)} taken; over the last {minutes:.0f} min Python's objects "
        f"{total(first):.1f} -> {total(last):.1f} MB (shallow); futures {last['futures']}"
    ]
    lines += [
        f"  {size / 1e3:+8.0f} kB {count:+7d} (now {now:7d})  {name}"
        for size, count, now, name in grew[:top]
        if size > 0
    ]
    before = {(b["type"], b["owner"]): b["len"] for b in first["big"]}
    lines.append("  largest containers (length then -> now, holder):")
    lines += [
        f"  {before.get((b['type'], b['owner']), 0):7d} -> {b['len']:7d}  {b['type']} {b['owner']}"
        for b in last["big"][:top]
    ]
    return lines
