"""Small inline SVG charts, drawn on the server: no JavaScript, no library.

Only numbers computed here and fixed strings go into the markup, so nothing needs escaping.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from django.utils.safestring import SafeString, mark_safe

#: The most points a line gets; longer histories are downsampled evenly.
MAX_POINTS = 500

WIDTH = 640
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 28


@dataclasses.dataclass(frozen=True)
class ScorePoint:
    """A competitor's published leaderboard score after one refit, numbered from 1."""

    number: int
    score: float
    sd: float
    #: The first point of a newer revision than the point before's.
    new_version: bool


def downsample(points: Sequence[ScorePoint], limit: int = MAX_POINTS) -> list[ScorePoint]:
    """At most `limit` points, evenly spread, keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) covering [low, high]."""
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _label(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-9 else "0"


def score_chart_svg(points: Sequence[ScorePoint]) -> SafeString | None:
    """The score history: the score, the band score +/- sd, and each new version."""
    if not points:
        return None
    total = points[-1].number
    shown = downsample(points)
    versions = [point.number for point in points if point.new_version]

    low = min(p.score - p.sd for p in shown)
    high = max(p.score + p.sd for p in shown)
    if high - low < 1:
        low, high = low - 0.5, high + 0.5
    ticks = nice_ticks(low, high)
    low, high = ticks[0], ticks[-1]

    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    x_first, x_last = points[0].number, total

    def x(number: int) -> float:
        if x_last == x_first:
            return LEFT + plot_w / 2
        return LEFT + (number - x_first) / (x_last - x_first) * plot_w

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    def line(values: list[tuple[float, float]]) -> str:
        return " ".join(f"{px:.1f},{py:.1f}" for px, py in values)

    score_line = line([(x(p.number), y(p.score)) for p in shown])
    band = line(
        [(x(p.number), y(p.score + p.sd)) for p in shown]
        + [(x(p.number), y(p.score - p.sd)) for p in reversed(shown)]
    )
    last = points[-1]
    summary = (
        f"Leaderboard score over {total} refit{'s' if total != 1 else ''}: "
        f"{last.score:.0f} ± {last.sd:.0f} now"
        + (f", {len(versions)} new version{'s' if len(versions) != 1 else ''}" if versions else "")
    )

    parts = [
        f'<svg class="rating-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{summary}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{summary}</title>",
        '<g class="rating-chart-axis">',
    ]
    for tick in ticks:
        ty = y(tick)
        parts.append(
            f'<line class="rating-chart-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
            f'y1="{ty:.1f}" y2="{ty:.1f}"/>'
            f'<text class="rating-chart-tick" x="{LEFT - 6}" y="{ty:.1f}" '
            f'text-anchor="end" dominant-baseline="middle">{_label(tick)}</text>'
        )
    for number in sorted({x_first, x_last}):
        parts.append(
            f'<text class="rating-chart-tick" x="{x(number):.1f}" y="{HEIGHT - 8}" '
            f'text-anchor="middle">{number}</text>'
        )
    parts.append("</g>")
    parts.append(f'<polygon class="rating-chart-band" points="{band}"/>')
    for number in versions:
        rx = x(number)
        parts.append(
            f'<line class="rating-chart-version" x1="{rx:.1f}" x2="{rx:.1f}" '
            f'y1="{TOP}" y2="{HEIGHT - BOTTOM}"><title>A new version from refit {number}</title>'
            "</line>"
        )
    parts.append(f'<polyline class="rating-chart-score" points="{score_line}"/>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # numbers and fixed text only
