"""How close a measured ranking is to the true one, for the rating benchmarks."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from typing import Any


def kendall_tau(truth: Sequence[float], measured: Sequence[float]) -> float:
    """Kendall's tau-b between two score lists (higher is better); ties count as neither."""
    concordant = discordant = tied_truth = tied_measured = 0
    for i, j in itertools.combinations(range(len(truth)), 2):
        a = (truth[i] > truth[j]) - (truth[i] < truth[j])
        b = (measured[i] > measured[j]) - (measured[i] < measured[j])
        if a == 0 and b == 0:
            continue
        if a == 0:
            tied_truth += 1
        elif b == 0:
            tied_measured += 1
        elif a == b:
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt(
        (concordant + discordant + tied_truth) * (concordant + discordant + tied_measured)
    )
    return (concordant - discordant) / denominator if denominator else 0.0


def tau_spread(taus: Sequence[float]) -> dict[str, Any]:
    """The figures of many rankings' taus: their median and their range."""
    return {"median_tau": statistics.median(taus), "tau_range": [min(taus), max(taus)]}


def tau_spread_text(figures: dict[str, Any]) -> str:
    """``tau_spread``'s figures in a table cell: the median, then the range."""
    least, most = figures["tau_range"]
    return f"{figures['median_tau']:.3f} ({least:.3f} to {most:.3f})"
