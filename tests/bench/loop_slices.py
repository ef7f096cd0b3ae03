"""What holds the event loop: each callback's run timed, the long ones sampled.

    with LoopSlices() as probe:      # in the loop's thread, around what to measure
        ...
    probe.report()

A benchmark's probe, never the product's: it wraps `asyncio.events.Handle._run` (every
callback the loop runs, a task's step included) to time each slice, and a sampling
thread reads the loop thread's stack while a slice runs past `sample_ms`, so a long
slice is named by the code it spent its time in. The switch interval is lowered while
it runs (the sampler needs the GIL to look), so it slows the loop a little: figures
taken with it show where the time goes, not how fast the bot is.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

#: the tree whose code runs (the package `bot` imported from it)
ROOT = str(Path(__file__).resolve().parents[2])
OURS = ("agents/", "bot/", "channels/", "config/")


@dataclass
class Slice:
    seconds: float
    what: str
    #: the loop thread's CPU time in it (the rest: waiting for the GIL, or preempted)
    cpu: float = 0.0
    #: our frame where the step resumed → where it stopped (a task's step)
    span: str = ""
    samples: list[tuple[str, ...]] = field(default_factory=list)


def describe(handle: asyncio.Handle) -> str:
    """The task (its coroutine's name) or the callback a handle runs."""
    callback: Any = getattr(handle, "_callback", None)
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro: Any = owner.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)}"
    return f"callback {getattr(callback, '__qualname__', callback)}"


def spread(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"p50 {statistics.median(ordered) * 1e3:.3f} ms, p99 {p99 * 1e3:.2f} ms, "
            f"max {ordered[-1] * 1e3:.1f} ms")  # fmt: skip


def short(frame: FrameType) -> str:
    """`file:line function`, the path from the repository or site-packages."""
    path = frame.f_code.co_filename.replace(ROOT + "/", "")
    path = path.split("site-packages/")[-1].split("lib/python3.11/")[-1]
    return f"{path}:{frame.f_lineno} {frame.f_code.co_name}"


def stack(frame: FrameType | None, limit: int = 40) -> tuple[str, ...]:
    """Innermost first."""
    out: list[str] = []
    while frame is not None and len(out) < limit:
        out.append(short(frame))
        frame = frame.f_back
    return tuple(out)


def ours(frames: Iterable[str]) -> str:
    """The innermost of our own frames."""
    return next((f for f in frames if f.startswith(OURS)), "?")


def awaiting(handle: asyncio.Handle) -> str:
    """Where a task's coroutine stands (our innermost frame in its await chain): where
    its step resumes, read before the step, and where it stopped, read after."""
    owner = getattr(getattr(handle, "_callback", None), "__self__", None)
    if not isinstance(owner, asyncio.Task):
        return ""
    chain: list[str] = []
    coro: Any = owner.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        frame = frame or getattr(coro, "ag_frame", None)
        if frame is not None:
            chain.append(short(frame))
        coro = (getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
                or getattr(coro, "ag_await", None))  # fmt: skip
    return ours(reversed(chain))


class LoopSlices:
    def __init__(
        self, threshold_ms: float = 2.0, sample_ms: float = 0.5, spans: bool = True
    ) -> None:
        self.spans = spans
        self.threshold = threshold_ms / 1000
        self.sample = sample_ms / 1000
        self.slices: list[Slice] = []
        #: every slice's wall and CPU seconds
        self.all: list[tuple[float, float]] = []
        self._current: Slice | None = None
        self._started = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sampler, daemon=True)
        self._tid = threading.get_ident()
        self._original: Any = None
        self._interval = sys.getswitchinterval()

    def __enter__(self) -> LoopSlices:
        global ROOT
        bot = sys.modules.get("bot")
        ROOT = str(Path(bot.__file__).resolve().parents[1]) if bot and bot.__file__ else ROOT
        original = self._original = asyncio.events.Handle._run
        probe = self

        def _run(handle: asyncio.Handle) -> None:
            if threading.get_ident() != probe._tid:  # another thread's loop
                return original(handle)
            now = probe._current = Slice(0.0, "")
            resumed = awaiting(handle) if probe.spans else ""
            probe._started = start = time.perf_counter()
            cpu = time.thread_time()
            try:
                original(handle)
            finally:
                probe._current = None
                now.seconds = time.perf_counter() - start
                now.cpu = time.thread_time() - cpu
                probe.all.append((now.seconds, now.cpu))
                if now.seconds >= probe.threshold:
                    now.what = describe(handle)
                    now.span = f"{resumed} -> {awaiting(handle)}" if probe.spans else ""
                    probe.slices.append(now)

        setattr(asyncio.events.Handle, "_run", _run)  # noqa: B010  (a probe, not the product)
        sys.setswitchinterval(self.sample / 2)
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        setattr(asyncio.events.Handle, "_run", self._original)  # noqa: B010
        sys.setswitchinterval(self._interval)

    def _sampler(self) -> None:
        while not self._stop.wait(self.sample):
            now = self._current
            if now is None or time.perf_counter() - self._started < self.sample:
                continue
            frame = sys._current_frames().get(self._tid)
            if self._current is now:
                now.samples.append(stack(frame))

    def report(self, top: int = 12) -> None:
        """The spread of slices, the longest ones, and where the long ones' time went."""
        if not self.all:
            print("no slices")
            return
        print(f"loop slices: {len(self.all)}; wall {spread([w for w, _ in self.all])}; "
              f"CPU {spread([c for _, c in self.all])}")  # fmt: skip
        wall = sum(s.seconds for s in self.slices)
        cpu = sum(s.cpu for s in self.slices)
        print(f"  >= {self.threshold * 1e3:g} ms wall: {len(self.slices)} slices, "
              f"{wall * 1e3:.0f} ms wall, {cpu * 1e3:.0f} ms CPU in all")  # fmt: skip
        kinds: Counter[str] = Counter()
        for s in self.slices:
            kinds[s.what] += round(s.seconds * 1e6)
        print("  long slices by task (ms in all, count):")
        for what, us in kinds.most_common(top):
            count = sum(1 for s in self.slices if s.what == what)
            print(f"    {us / 1e3:8.1f} ms {count:5d}x  {what}")
        if self.spans:
            self._by_span(top)
        self._by_code(top)

    def _by_span(self, top: int) -> None:
        spans: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        cpu: Counter[str] = Counter()
        for s in self.slices:
            spans[s.span] += round(s.seconds * 1e6)
            cpu[s.span] += round(s.cpu * 1e6)
            counts[s.span] += 1
        print("  long slices by where the task resumed -> where it stopped "
              "(wall in all, count, mean wall / CPU):")  # fmt: skip
        for span, us in spans.most_common(top):
            n = counts[span]
            mean = f"{us / n / 1e3:6.2f} / {cpu[span] / n / 1e3:5.2f} ms"
            print(f"    {us / 1e3:8.1f} ms {n:5d}x {mean}  {span}")

    def _by_code(self, top: int) -> None:
        """Samples grouped by the innermost frame of ours and the innermost frame under
        it (a library's or ours), each sample worth one sampling interval."""
        mine: Counter[str] = Counter()
        leaf: Counter[str] = Counter()
        for s in self.slices:
            for sample in s.samples:
                ours_ = ours(sample)
                mine[ours_] += 1
                leaf[f"{sample[0]}  <-  {ours_}" if sample else "?"] += 1
        total = sum(mine.values()) or 1
        print(f"  samples in long slices: {total}; by the innermost frame of ours:")
        for where, n in mine.most_common(top):
            print(f"    {n * 100 / total:5.1f}%  {where}")
        print("  by innermost frame (<- ours):")
        for where, n in leaf.most_common(top):
            print(f"    {n * 100 / total:5.1f}%  {where}")
