"""The mean return of an evaluation's episodes and its 95 % confidence interval.

The interval is Student's t over the episodes: mean ± t(0.975, n - 1) · s / √n, with s
the sample standard deviation (n - 1 in the denominator). Episodes of one evaluation are
independent draws (different seeds) of the agent's return, so this is the usual interval
of a mean from a sample whose variance is unknown. With one episode there is no interval.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics

#: t(0.975, df) for df = 1..10, from the standard tables; beyond that the Cornish-Fisher
#: expansion below agrees with the tables to three decimals.
_T_975_SMALL = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
_Z_975 = 1.959963984540054


def t_quantile_975(degrees_of_freedom: int) -> float:
    """The 97.5th percentile of Student's t with ``degrees_of_freedom`` (at least 1)."""
    if degrees_of_freedom < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    if degrees_of_freedom <= len(_T_975_SMALL):
        return _T_975_SMALL[degrees_of_freedom - 1]
    # The expansion of t's quantile in powers of 1/df around the normal's (Abramowitz and
    # Stegun 26.7.5), to the third term.
    z, df = _Z_975, degrees_of_freedom
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


@dataclasses.dataclass(frozen=True)
class ScoreSummary:
    episodes: int
    mean: float
    #: The 95 % interval's ends; None with fewer than two episodes.
    low: float | None
    high: float | None
    stdev: float | None

    @property
    def half_width(self) -> float | None:
        return None if self.high is None else self.high - self.mean

    def as_json(self) -> dict[str, float | int | None]:
        return dataclasses.asdict(self)


def summarize(returns: list[float]) -> ScoreSummary:
    """Mean and 95 % interval of ``returns`` (one per episode, at least one)."""
    if not returns:
        raise ValueError("no episodes to summarize")
    mean = statistics.fmean(returns)
    if len(returns) < 2:
        return ScoreSummary(len(returns), mean, None, None, None)
    stdev = statistics.stdev(returns)
    half_width = t_quantile_975(len(returns) - 1) * stdev / math.sqrt(len(returns))
    return ScoreSummary(len(returns), mean, mean - half_width, mean + half_width, stdev)


def episode_seeds(seed: int, count: int) -> list[int]:
    """The seeds of ``count`` episodes, drawn from one competition seed: every agent of a
    score competition plays these same episodes."""
    return [random.Random(seed * 1_000_003 + index).randrange(2**31) for index in range(count)]
