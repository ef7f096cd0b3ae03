"""How the status reads: plain-text tables, and times as people say them (`3m ago`, a date)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in headers], *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: object) -> str:
    text = "" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def ago(ts: float | None, now: float | None = None) -> str:
    """`5m ago`, or `in 5m` for a time still to come."""
    if not ts:
        return "-"
    seconds = int((now or time.time()) - ts)
    return f"{span(seconds)} ago" if seconds >= 0 else f"in {span(-seconds)}"


def span(seconds: float) -> str:
    """A duration in its largest whole unit: `3d`, `2h`, `5m`, `40s`."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
