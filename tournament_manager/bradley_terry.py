"""A Bradley-Terry fit of a whole match history, for the published leaderboard.

An agent's revision does not change, so every match it played says as much about its
strength as its latest one: the leaderboard is fitted to all of them at once, rather than
updated match by match (the online openskill ratings, which remember the latest games more,
only steer matchmaking).

The model: player 1 beats player 2 with probability ``1 / (1 + exp(-(s1 - s2 + h)))``,
where ``s`` is each agent's strength and ``h`` the advantage of moving first (common to
every pair, fitted with them, so unbalanced seats bias nobody). A draw counts as half a
win for each. A normal prior on every strength (mean 0, sd ``PRIOR_SD``) keeps the fit
finite when an agent won or lost everything, and draws an agent with few matches towards
the middle instead of the top: one lucky win does not make a leader. The fit is the
posterior's mode, found by Newton's method; its uncertainty is the inverse of the
posterior's curvature there (the Laplace approximation), which also gives, for any two
agents, the probability that their order is the other way round.

Strengths are reported on the Elo scale (400 points for a factor 10 in the odds of
winning), 1500 being the field's mean; so are their standard deviations, which leave out
the uncertainty of that mean (it moves everyone together, and no one's rank).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection, Hashable, Iterable, Sequence

import numpy as np

#: The prior's sd of a strength, in natural units (log-odds): 2 is about 350 Elo points.
PRIOR_SD = 2.0
#: The prior's sd of the first mover's advantage.
ADVANTAGE_PRIOR_SD = 1.0
ELO_PER_UNIT = 400 / math.log(10)
ELO_MEAN = 1500.0
#: One-sided level at which an agent counts as surely ahead of another (the rank
#: interval is a 95 % one: 2.5 % on each side).
SURELY_AHEAD = 0.975


@dataclasses.dataclass(frozen=True)
class Games:
    """Matches between two agents, ``first`` moving first: how many, and ``first``'s
    points (a win 1, a draw 1/2)."""

    first: Hashable
    second: Hashable
    games: int
    first_points: float


@dataclasses.dataclass(frozen=True)
class Fit:
    players: tuple[Hashable, ...]
    #: Natural units, in the order of ``players``.
    strengths: np.ndarray
    #: Covariance of the strengths (the Laplace approximation).
    covariance: np.ndarray
    #: The first mover's advantage, natural units, and its sd.
    advantage: float
    advantage_sd: float

    @functools.cached_property
    def _positions(self) -> dict[Hashable, int]:
        return {player: i for i, player in enumerate(self.players)}

    def index(self, player: Hashable) -> int:
        return self._positions[player]

    def elo(self, player: Hashable) -> float:
        return ELO_MEAN + ELO_PER_UNIT * float(self.strengths[self.index(player)])

    def elo_sd(self, player: Hashable) -> float:
        i = self.index(player)
        return ELO_PER_UNIT * math.sqrt(float(self.covariance[i, i]))

    def ahead_probabilities(self) -> np.ndarray:
        """``[i, j]``: the probability that player ``i`` is stronger than player ``j``."""
        variance = np.diag(self.covariance)
        spread = np.sqrt(
            np.maximum(variance[:, None] + variance[None, :] - 2 * self.covariance, 1e-18)
        )
        gap = self.strengths[:, None] - self.strengths[None, :]
        return np.vectorize(_normal_cdf)(gap / spread)

    def ranks(self, among: Collection[Hashable] | None = None) -> dict[Hashable, int]:
        """Ranks by strength among ``among`` (every player by default), 1 for the
        strongest; equal strengths share a rank."""
        chosen = self._indices(among)
        order = sorted(chosen, key=lambda i: -self.strengths[i])
        ranks: dict[Hashable, int] = {}
        previous: float | None = None
        rank = 0
        for position, i in enumerate(order, start=1):
            if previous is None or not math.isclose(self.strengths[i], previous, abs_tol=1e-9):
                rank, previous = position, float(self.strengths[i])
            ranks[self.players[i]] = rank
        return ranks

    def rank_intervals(
        self, among: Collection[Hashable] | None = None
    ) -> dict[Hashable, tuple[int, int]]:
        """For every player, the best and worst rank (95 %) it may hold among the
        players ``among`` (every player by default; a player outside them is placed
        among them as if it joined): at best it is behind only those surely ahead of
        it (probability at least 97.5 %), at worst behind all not surely behind it."""
        ahead = self.ahead_probabilities()
        field = self._indices(among)
        inside = np.zeros(len(self.players), dtype=bool)
        inside[field] = True
        # ahead[i, i] is 1/2: never "surely", so a player never counts itself ahead,
        # but it is "not surely behind" itself, once, when it is in the field.
        surely_ahead = (ahead[field, :] >= SURELY_AHEAD).sum(axis=0)
        not_surely_behind = (ahead[:, field] < SURELY_AHEAD).sum(axis=1) - inside
        return {
            player: (1 + int(surely_ahead[i]), 1 + int(not_surely_behind[i]))
            for i, player in enumerate(self.players)
        }

    def _indices(self, among: Collection[Hashable] | None) -> list[int]:
        if among is None:
            return list(range(len(self.players)))
        return [i for i, player in enumerate(self.players) if player in among]


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def fit(
    players: Sequence[Hashable],
    games: Iterable[Games],
    *,
    prior_sd: float = PRIOR_SD,
    advantage_prior_sd: float = ADVANTAGE_PRIOR_SD,
) -> Fit:
    """The posterior mode of every player's strength given ``games`` (between ``players``
    only), with its covariance."""
    players = tuple(players)
    index = {player: i for i, player in enumerate(players)}
    n = len(players)
    records = [record for record in games if record.games > 0]
    # One entry per pairing and seat order (not per match): who moved first, who second.
    first = np.array([index[record.first] for record in records], dtype=np.intp)
    second = np.array([index[record.second] for record in records], dtype=np.intp)
    counts = np.array([record.games for record in records], dtype=float)
    points = np.array([record.first_points for record in records], dtype=float)
    advantage = n  # the last parameter
    precision = np.full(n + 1, 1 / prior_sd**2)
    precision[advantage] = 1 / advantage_prior_sd**2

    def logits(beta: np.ndarray) -> np.ndarray:
        return np.asarray(beta[first] - beta[second] + beta[advantage])

    def log_posterior(beta: np.ndarray) -> float:
        x = logits(beta)
        # log p = -log(1 + e^-x), log(1 - p) = -log(1 + e^x), computed without overflow.
        return float(
            -(points * np.logaddexp(0, -x)).sum()
            - ((counts - points) * np.logaddexp(0, x)).sum()
            - 0.5 * (precision * beta**2).sum()
        )

    def gradient(beta: np.ndarray) -> np.ndarray:
        surprise = points - counts * _logistic(logits(beta))
        result = -precision * beta
        np.add.at(result, first, surprise)
        np.subtract.at(result, second, surprise)
        result[advantage] += surprise.sum()
        return result

    def curvature(beta: np.ndarray) -> np.ndarray:
        """Minus the Hessian: the sum over pairings of w x x^T, x being +1 for the first,
        -1 for the second and +1 for the advantage, plus the prior's precision."""
        chances = _logistic(logits(beta))
        weights = counts * chances * (1 - chances)
        matrix = np.diag(precision)
        h = np.full_like(first, advantage)
        for rows, columns, sign in (
            (first, first, 1.0),
            (second, second, 1.0),
            (first, second, -1.0),
            (second, first, -1.0),
            (first, h, 1.0),
            (h, first, 1.0),
            (second, h, -1.0),
            (h, second, -1.0),
        ):
            np.add.at(matrix, (rows, columns), sign * weights)
        matrix[advantage, advantage] += weights.sum()
        return matrix

    beta = np.zeros(n + 1)
    current = log_posterior(beta)
    for _ in range(100):
        step = np.linalg.solve(curvature(beta), gradient(beta))
        # The posterior is log-concave, so a full Newton step is nearly always taken;
        # halving guards the first steps from far off.
        scale = 1.0
        while scale > 1e-6:
            candidate = beta + scale * step
            value = log_posterior(candidate)
            if value >= current - 1e-12:
                break
            scale /= 2
        beta, current = candidate, value
        if np.abs(scale * step).max() < 1e-10:
            break
    covariance = np.linalg.inv(curvature(beta))
    # Only differences of strength are measured: the scale is centred on the field's
    # mean, and so is the uncertainty (what all strengths share moves no one's rank).
    centring = np.eye(n) - 1 / n
    return Fit(
        players=players,
        strengths=centring @ beta[:n],
        covariance=centring @ covariance[:n, :n] @ centring,
        advantage=float(beta[advantage]),
        advantage_sd=math.sqrt(float(covariance[advantage, advantage])),
    )


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1 + np.tanh(0.5 * x)))
