"""The event log: reading a time window finds exactly the events in it, fast."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.events import BLOCK, EventLog, offset_before, read_events


def _write(path: Path, stamps: list[float], garbage_every: int = 0) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, ts in enumerate(stamps):
            fh.write(json.dumps({"type": "t", "agent_id": "a", "data": {"i": i}, "ts": ts}) + "\n")
            if garbage_every and i % garbage_every == 0:
                fh.write("not json at all {\n")


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0, max_value=500), min_size=0, max_size=400),
    since=st.floats(min_value=-100, max_value=100_000),
    span=st.one_of(st.none(), st.floats(min_value=0, max_value=50_000)),
    garbage_every=st.integers(min_value=0, max_value=7),
)
def test_a_window_holds_exactly_the_events_stamped_in_it(
    tmp_path_factory, gaps: list[float], since: float, span: float | None, garbage_every: int
) -> None:
    path = tmp_path_factory.mktemp("ev") / "events.jsonl"
    stamps, now = [], 0.0
    for gap in gaps:
        now += gap
        stamps.append(now)
    _write(path, stamps, garbage_every)
    until = None if span is None else since + span
    got = [e.data["i"] for e in read_events(path, since, until)]
    want = [i for i, ts in enumerate(stamps) if ts >= since and (until is None or ts < until)]
    assert got == want


def test_the_last_hour_of_a_long_log_is_read_without_scanning_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    now = time.time()
    _write(path, [now - 30 * 86400 + i * 12 for i in range(200_000)])  # 28 days, ~16 MB
    log = EventLog(path)
    log.emit("message.received", "human", text="the last one")
    log.close()
    assert [e.type for e in read_events(path, now - 3600)] == ["message.received"]
    with path.open("rb") as fh:
        start = offset_before(fh, now - 3600)
        size = fh.seek(0, 2)
    assert size - start < 2 * BLOCK  # the read starts in the file's last blocks
