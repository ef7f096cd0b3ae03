"""Server-rendered SVG charts for the dashboard: no script, no CDN, no inline style
(the Content-Security-Policy stays as it is). Colours are presentation attributes
and classes of the dashboard's stylesheet; every label goes through `esc`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bot.ops.html import Markup, esc

WIDTH, HEIGHT = 480, 160
BAR_MAX = 36  # a bar's widest: one channel is a bar, not a block
LEFT, BOTTOM, TOP = 44, 22, 10
SERIES = ("#3b6ea5", "#c9733a")


def _scale(values: Sequence[float]) -> float:
    """The axis' top: the largest value rounded up to 1, 2 or 5 times a power of ten
    (NaN, no data, is skipped), so a scale reads 0-50, not 0-44."""
    top = max([v for v in values if v == v] or [0.0])
    if top <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(top))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= top * (1 - 1e-9))


def _frame(title: str, top: float, unit: str, labels: Sequence[str]) -> str:
    plot_h = HEIGHT - BOTTOM - TOP
    axis = (
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH}" y2="{TOP + plot_h}" stroke="#999"/>'
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end" font-size="10">'
        f"{esc(_amount(top, unit))}</text>"
        f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end" font-size="10">0</text>'
    )
    step = (WIDTH - LEFT) / max(1, len(labels))
    ticks = "".join(
        f'<text x="{LEFT + step * (i + 0.5):.1f}" y="{HEIGHT - 6}" text-anchor="middle" '
        f'font-size="9">{esc(label)}</text>'
        for i, label in enumerate(labels)
        if label
    )
    return f"<title>{esc(title)}</title>{axis}{ticks}"


def bars(title: str, labels: Sequence[str], values: Sequence[float], unit: str = "") -> Markup:
    """One bar per label (24 hours, or channels), scaled to the largest value."""
    top = _scale(values)
    plot_h = HEIGHT - BOTTOM - TOP
    step = (WIDTH - LEFT) / max(1, len(values))
    width = min(BAR_MAX, max(1.0, step - 2))
    rects = "".join(
        f'<rect x="{LEFT + step * (i + 0.5) - width / 2:.1f}" '
        f'y="{TOP + plot_h - plot_h * v / top:.1f}" '
        f'width="{width:.1f}" height="{plot_h * v / top:.1f}" fill="{SERIES[0]}">'
        f"<title>{esc(labels[i] or str(i))}: {esc(_amount(v, unit))}</title></rect>"
        for i, v in enumerate(values)
        if v > 0
    )
    return _svg(title, _frame(title, top, unit, _sparse(labels)) + rects)


def lines(
    title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], unit: str
) -> Markup:
    """Polylines (p50, p95 ...) over the same labels; NaN leaves a gap."""
    top = _scale([v for _name, values in series for v in values])
    plot_h = HEIGHT - BOTTOM - TOP
    step = (WIDTH - LEFT) / max(1, len(labels))
    drawn = []
    for n, (name, values) in enumerate(series):
        at = [
            (i, v, LEFT + step * (i + 0.5), TOP + plot_h - plot_h * v / top)
            for i, v in enumerate(values)
            if v == v
        ]
        points = " ".join(f"{x:.1f},{y:.1f}" for _i, _v, x, y in at)
        colour = SERIES[n % len(SERIES)]
        dots = "".join(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{esc(name)} '
            f"{esc(labels[i])}: {esc(_amount(v, unit))}</title></circle>"
            for i, v, x, y in at
        )  # a point shows even alone (a one-point polyline draws nothing)
        drawn.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{esc(name)}</title></polyline>{dots}"
            f'<text x="{WIDTH - 4}" y="{TOP + 10 + 12 * n}" text-anchor="end" font-size="10" '
            f'fill="{colour}">{esc(name)}</text>'
        )
    return _svg(title, _frame(title, top, unit, _sparse(labels)) + "".join(drawn))


def _svg(title: str, inner: str) -> Markup:
    return Markup(
        f'<figure class="chart"><svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'aria-label="{esc(title)}">{inner}</svg><figcaption>{esc(title)}</figcaption></figure>'
    )


def _sparse(labels: Sequence[str]) -> list[str]:
    """Every label when few, else every sixth (hours: 4 labels a day)."""
    if len(labels) <= 8:
        return list(labels)
    return [label if i % 6 == 0 else "" for i, label in enumerate(labels)]


def _fmt(value: float) -> str:
    if value >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.2f}" if value >= 0.01 else f"{value:.4f}"


def _amount(value: float, unit: str) -> str:
    """`$0.36` for dollars, `0.12 s` for the rest."""
    if unit.strip() == "$":
        return f"${_fmt(value)}"
    return f"{_fmt(value)}{unit}"
