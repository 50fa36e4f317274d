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
class RatingPoint:
    """A rating after one change, numbered from 1."""

    number: int
    mu: float
    sigma: float
    is_reset: bool

    @property
    def conservative(self) -> float:
        return self.mu - 3 * self.sigma


def downsample(points: Sequence[RatingPoint], limit: int = MAX_POINTS) -> list[RatingPoint]:
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


def rating_chart_svg(points: Sequence[RatingPoint]) -> SafeString | None:
    """The rating history: mu, the band mu +/- sigma, the leaderboard's mu - 3 sigma, resets."""
    if not points:
        return None
    total = points[-1].number
    shown = downsample(points)
    resets = [point.number for point in points if point.is_reset]

    low = min(min(p.conservative, p.mu - p.sigma) for p in shown)
    high = max(p.mu + p.sigma for p in shown)
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

    mu_line = line([(x(p.number), y(p.mu)) for p in shown])
    conservative_line = line([(x(p.number), y(p.conservative)) for p in shown])
    band = line(
        [(x(p.number), y(p.mu + p.sigma)) for p in shown]
        + [(x(p.number), y(p.mu - p.sigma)) for p in reversed(shown)]
    )
    last = points[-1]
    summary = (
        f"Rating over {total} change{'s' if total != 1 else ''}: "
        f"mu {last.mu:.2f}, leaderboard rating (mu - 3 sigma) {last.conservative:.2f} now"
        + (f", {len(resets)} reset{'s' if len(resets) != 1 else ''}" if resets else "")
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
    for number in resets:
        rx = x(number)
        parts.append(
            f'<line class="rating-chart-reset" x1="{rx:.1f}" x2="{rx:.1f}" '
            f'y1="{TOP}" y2="{HEIGHT - BOTTOM}"><title>Reset at change {number}</title></line>'
        )
    parts.append(f'<polyline class="rating-chart-conservative" points="{conservative_line}"/>')
    parts.append(f'<polyline class="rating-chart-mu" points="{mu_line}"/>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # numbers and fixed text only
