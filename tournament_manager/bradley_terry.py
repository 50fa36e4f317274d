"""A Bradley-Terry fit of a whole match history, for the published leaderboard.

An agent's revision does not change, so every match it played says as much about its
strength as its latest one: the leaderboard is fitted to all of them at once, rather than
updated match by match (as the online openskill ratings are, which remember the latest
games more). The ladder's matchmaking is steered by this fit too.

The model: player 1 beats player 2 with probability ``1 / (1 + exp(-(s1 - s2 + h)))``,
where ``s`` is each agent's strength and ``h`` the advantage of moving first (common to
every pair, fitted with them, so unbalanced seats bias nobody). A draw counts as half a
win for each. A normal prior on every strength (mean 0, sd ``PRIOR_SD``) keeps the fit
finite when an agent won or lost everything, and draws an agent with few matches towards
the middle instead of the top: one lucky win does not make a leader. The fit is the
posterior's mode, found by Newton's method; its uncertainty is the inverse of the
posterior's curvature there (the Laplace approximation), which also gives, for any two
agents, the probability that their order is the other way round.

The fit grows with the matches, not with the cube of the agents: the posterior's curvature
is a sparse matrix (one entry per pair of agents that met), Newton's steps are solved on it
by conjugate gradients, and no dense matrix is formed. Its inverse, the covariance, is
formed only for a field of at most ``DENSE_LIMIT`` agents, where it gives every pair's
probability of being the other way round exactly. A larger field gets each agent's
variance from ``PROBES`` random draws of the posterior (exact Gaussian draws, each one
solve), with the variance of a simpler draw whose expectation is known as a control (its
error is what the draws add to ``1/curvature`` of the agent alone), and treats two agents'
errors as independent for the rank intervals; on the benchmark fields that moves an
interval's ends by less than a rank on average (BENCHMARKS.md). Those intervals are counted
without comparing every pair: against a group of agents of like variance sorted by
strength, a search finds who is surely ahead or behind, and only the few in between are
compared one by one. A history of hundreds of thousands of pairings comes as columns
(``GameTable``).

Strengths are reported on the Elo scale (400 points for a factor 10 in the odds of
winning), 1500 being the field's mean; so are their standard deviations, which leave out
the uncertainty of that mean (it moves everyone together, and no one's rank).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection, Hashable, Iterable, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sparse

#: The prior's sd of a strength, in natural units (log-odds): 2 is about 350 Elo points.
PRIOR_SD = 2.0
#: The prior's sd of the first mover's advantage.
ADVANTAGE_PRIOR_SD = 1.0
ELO_PER_UNIT = 400 / math.log(10)
ELO_MEAN = 1500.0
#: Where the prior places a player with no match, on the Elo scale: its score and sd.
UNFITTED_SCORE = ELO_MEAN
UNFITTED_SCORE_SD = ELO_PER_UNIT * PRIOR_SD
#: One-sided level at which an agent counts as surely ahead of another (the rank
#: interval is a 95 % one: 2.5 % on each side).
SURELY_AHEAD = 0.975
#: The largest field whose covariance is formed whole (a dense matrix of this side).
DENSE_LIMIT = 2000
#: Random draws of the posterior a larger field's variances are estimated from.
PROBES = 96
#: Relative residual at which a conjugate-gradient solve stops.
SOLVE_TOLERANCE = 1e-10
#: The same for the draws of a larger field's variances (single precision).
PROBE_TOLERANCE = 1e-4
#: Rows of a larger field's rank intervals compared with the whole field at once.
INTERVAL_ROWS = 256


class Games(NamedTuple):
    """Matches between two agents, ``first`` moving first: how many, and ``first``'s
    points (a win 1, a draw 1/2). The same two agents may come in several (they add up)."""

    first: Hashable
    second: Hashable
    games: int
    first_points: float


@dataclasses.dataclass(frozen=True)
class GameTable:
    """Many ``Games`` as columns, for a history of hundreds of thousands of pairings read
    straight from the database (a ``Games`` each would take longer than the fit)."""

    first: np.ndarray
    second: np.ndarray
    games: np.ndarray
    first_points: np.ndarray

    @classmethod
    def of(cls, games: Iterable[Games]) -> GameTable:
        records = list(games)
        return cls(
            first=np.array([record.first for record in records]),
            second=np.array([record.second for record in records]),
            games=np.array([record.games for record in records], dtype=np.int64),
            first_points=np.array([record.first_points for record in records], dtype=float),
        )

    def __len__(self) -> int:
        return len(self.games)

    def __add__(self, other: GameTable) -> GameTable:
        if not len(other) or not len(self):
            return other if not len(self) else self  # (an empty one's columns have no type)
        return GameTable(
            *(
                np.concatenate([getattr(self, field.name), getattr(other, field.name)])
                for field in dataclasses.fields(self)
            )
        )


@dataclasses.dataclass(frozen=True)
class Fit:
    players: tuple[Hashable, ...]
    #: Natural units, in the order of ``players``.
    strengths: np.ndarray
    #: Each strength's variance about the field's mean.
    variances: np.ndarray
    #: The first mover's advantage, natural units, and its sd.
    advantage: float
    advantage_sd: float
    #: Covariance of the strengths (the Laplace approximation), for a field of at most
    #: ``DENSE_LIMIT``; None for a larger one, whose errors count as independent.
    covariance: np.ndarray | None = None

    @functools.cached_property
    def _positions(self) -> dict[Hashable, int]:
        return {player: i for i, player in enumerate(self.players)}

    def index(self, player: Hashable) -> int:
        return self._positions[player]

    def elo(self, player: Hashable) -> float:
        return ELO_MEAN + ELO_PER_UNIT * float(self.strengths[self.index(player)])

    def elo_sd(self, player: Hashable) -> float:
        return ELO_PER_UNIT * math.sqrt(float(self.variances[self.index(player)]))

    def _gaps(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``[a, b]``: how many standard deviations player ``rows[a]`` is stronger than
        player ``columns[b]`` (0 for a player and itself); the probability that it is
        stronger is the normal distribution's at that point."""
        spread = self.variances[rows, None] + self.variances[None, columns]
        if self.covariance is not None:
            spread -= 2 * self.covariance[np.ix_(rows, columns)]
        gap = self.strengths[rows, None] - self.strengths[None, columns]
        gap /= np.sqrt(np.maximum(spread, 1e-18))
        gap[rows[:, None] == columns[None, :]] = 0.0
        return gap

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
        field = np.array(self._indices(among), dtype=np.intp)
        # "Surely ahead": ahead with probability at least SURELY_AHEAD, i.e. by at least
        # this many standard deviations (the gap is symmetric: i's over j is minus j's
        # over i).
        sure = NormalDist().inv_cdf(SURELY_AHEAD)
        if self.covariance is None:
            surely_ahead, not_surely_behind = self._independent_counts(field, sure)
        else:
            surely_ahead, not_surely_behind = self._block_counts(field, sure)
        return {
            player: (1 + int(surely_ahead[i]), 1 + int(not_surely_behind[i]))
            for i, player in enumerate(self.players)
        }

    def _block_counts(self, field: np.ndarray, sure: float) -> tuple[np.ndarray, np.ndarray]:
        """For every player, how many of ``field`` are surely ahead of it and how many
        are not surely behind it (itself not counted): a block of players at a time
        against the whole field, never an n x n matrix whole."""
        everyone = np.arange(len(self.players))
        surely_ahead = np.zeros(len(self.players), dtype=np.int64)
        not_surely_behind = np.zeros(len(self.players), dtype=np.int64)
        for start in range(0, len(self.players), INTERVAL_ROWS):
            block = everyone[start : start + INTERVAL_ROWS]
            gaps = self._gaps(field, block)  # field players over the block's
            surely_ahead[block] = (gaps >= sure).sum(axis=0)
            # A player is "not surely behind" itself (a gap of 0), once, when in the field.
            not_surely_behind[block] = (-gaps < sure).sum(axis=0) - np.isin(block, field)
        return surely_ahead, not_surely_behind

    def _independent_counts(self, field: np.ndarray, sure: float) -> tuple[np.ndarray, np.ndarray]:
        """``_block_counts`` when two players' errors count as independent (a larger
        field), without comparing every pair: the field is cut into groups of like
        variance, each sorted by strength; against a group, a player's gap to a member
        grows with the member's strength, so a search finds who is surely ahead (or not)
        whatever their variance within the group, and only those in between are compared
        one by one."""
        strengths, variances = self.strengths, self.variances
        everyone = np.arange(len(self.players))
        surely_ahead = np.zeros(len(self.players), dtype=np.int64)
        not_surely_behind = np.zeros(len(self.players), dtype=np.int64)
        by_variance = field[np.argsort(variances[field], kind="stable")]
        for group in np.array_split(by_variance, max(1, len(field) // INTERVAL_ROWS)):
            if not len(group):
                continue
            group = group[np.argsort(strengths[group], kind="stable")]
            members = strengths[group]
            # Margins at the group's least and greatest variance, widened a little: a
            # member on a boundary is compared exactly.
            least = sure * np.sqrt(variances + variances[group].min()) * (1 - 1e-9)
            most = sure * np.sqrt(variances + variances[group].max()) * (1 + 1e-9)
            # Surely ahead: s_j - s_i >= sure x sd. Every member from ``beyond`` on is;
            # none before ``maybe``.
            maybe = np.searchsorted(members, strengths + least)
            beyond = np.searchsorted(members, strengths + most)
            surely_ahead += len(group) - beyond
            surely_ahead += self._exact_counts(everyone, group, maybe, beyond, sure, ahead=True)
            # Not surely behind: s_i - s_j < sure x sd. Every member after ``within`` is;
            # none up to ``below``.
            below = np.searchsorted(members, strengths - most, side="right")
            within = np.searchsorted(members, strengths - least, side="right")
            not_surely_behind += len(group) - within
            not_surely_behind += self._exact_counts(
                everyone, group, below, within, sure, ahead=False
            )
        # A player is "not surely behind" itself (a gap of 0), once, when in the field.
        not_surely_behind -= np.isin(everyone, field)
        return surely_ahead, not_surely_behind

    def _exact_counts(
        self,
        players: np.ndarray,
        group: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        sure: float,
        *,
        ahead: bool,
    ) -> np.ndarray:
        """For each player, how many of ``group[starts:ends]`` are surely ahead of it
        (``ahead``) or not surely behind it, compared one by one."""
        lengths = ends - starts
        if not lengths.sum():
            return np.zeros(len(players), dtype=np.int64)
        owners = np.repeat(players, lengths)
        # Each owner's run of positions in the group: start, start + 1, ...
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        others = group[np.repeat(starts, lengths) + offsets]
        spread = np.maximum(self.variances[owners] + self.variances[others], 1e-18)
        gaps = (self.strengths[others] - self.strengths[owners]) / np.sqrt(spread)
        gaps[owners == others] = 0.0
        counted = gaps >= sure if ahead else -gaps < sure
        return np.bincount(owners, weights=counted, minlength=len(players)).astype(np.int64)

    def _indices(self, among: Collection[Hashable] | None) -> list[int]:
        if among is None:
            return list(range(len(self.players)))
        return [i for i, player in enumerate(self.players) if player in among]


def fit(
    players: Sequence[Hashable],
    games: Iterable[Games] | GameTable,
    *,
    prior_sd: float = PRIOR_SD,
    advantage_prior_sd: float = ADVANTAGE_PRIOR_SD,
    dense_limit: int = DENSE_LIMIT,
    probes: int = PROBES,
    seed: int = 0,
    uncertainty: bool = True,
) -> Fit:
    """The posterior mode of every player's strength given ``games`` (between ``players``
    only), with its uncertainty: the whole covariance for at most ``dense_limit`` players,
    each one's variance (from ``probes`` draws, ``seed`` their randomness) beyond. Without
    ``uncertainty`` (strengths are all that is wanted: a ladder's order) the variances are
    only each player's own part, ``1/curvature``, and cost nothing more."""
    # Here, not at the top: scipy costs every process that imports this module (the
    # admin, the gateways, each command) about 0.3 s of CPU, and only a fit uses it.
    import scipy.sparse as sparse

    players = tuple(players)
    n = len(players)
    table = games if isinstance(games, GameTable) else GameTable.of(games)
    # A player's games against itself (never rated) would say nothing of its strength.
    played = (table.games > 0) & (table.first != table.second)
    # One row per pairing and seat order (not per match): +1 for who moved first, -1 for
    # who moved second, +1 for the advantage (the last parameter).
    first = _player_positions(players, table.first[played])
    second = _player_positions(players, table.second[played])
    counts = table.games[played].astype(float)
    points = table.first_points[played].astype(float)
    pairings = len(counts)
    advantage = n
    rows = np.repeat(np.arange(pairings), 3)
    columns = np.column_stack([first, second, np.full(pairings, advantage)]).ravel()
    signs = np.tile([1.0, -1.0, 1.0], pairings)
    design = sparse.csr_matrix((signs, (rows, columns)), shape=(pairings, n + 1))
    precision = np.full(n + 1, 1 / prior_sd**2)
    precision[advantage] = 1 / advantage_prior_sd**2
    dense = n <= dense_limit

    def log_posterior(beta: np.ndarray) -> float:
        x = design @ beta
        # log p = -log(1 + e^-x), log(1 - p) = -log(1 + e^x), computed without overflow.
        return float(
            -(points * np.logaddexp(0, -x)).sum()
            - ((counts - points) * np.logaddexp(0, x)).sum()
            - 0.5 * (precision * beta**2).sum()
        )

    def gradient(beta: np.ndarray) -> np.ndarray:
        surprise = points - counts * _logistic(design @ beta)
        return np.asarray(design.T @ surprise - precision * beta)

    # Minus the Hessian is the sum over pairings of w x x^T (x a row of the design) plus
    # the prior's precision: its pattern is the same at every step, only w changes. The
    # terms between two players (-w, both ways) have their places in the matrix's data
    # found once; the diagonal and the advantage's row and column are sums by player.
    ones = abs(design)  # no cancellation: every pair that met is in the pattern
    pattern = (ones.T @ ones + sparse.identity(n + 1, format="csr")).tocsr()
    pattern.sort_indices()
    pair_places = _places(pattern, np.concatenate([first, second]), np.concatenate([second, first]))
    diagonal_places = _places(pattern, np.arange(n + 1), np.arange(n + 1))
    met = np.flatnonzero(np.bincount(np.concatenate([first, second]), minlength=n))
    advantage_places = np.concatenate(
        [
            _places(pattern, np.full(len(met), advantage), met),
            _places(pattern, met, np.full(len(met), advantage)),
        ]
    )

    def curvature(beta: np.ndarray) -> tuple[sparse.csr_matrix, np.ndarray]:
        """Minus the Hessian, and each pairing's weight w."""
        chances = _logistic(design @ beta)
        weights = counts * chances * (1 - chances)
        data = np.bincount(
            pair_places, weights=-np.concatenate([weights, weights]), minlength=pattern.nnz
        )
        as_first = np.bincount(first, weights=weights, minlength=n)
        as_second = np.bincount(second, weights=weights, minlength=n)
        data[diagonal_places] += np.append(as_first + as_second, weights.sum()) + precision
        data[advantage_places] += np.tile((as_first - as_second)[met], 2)
        matrix = sparse.csr_matrix(
            (data, pattern.indices, pattern.indptr), shape=pattern.shape, copy=False
        )
        return matrix, weights

    def solve(matrix: sparse.csr_matrix, right: np.ndarray) -> np.ndarray:
        if dense:
            return np.asarray(np.linalg.solve(matrix.toarray(), right))
        return _conjugate_gradients(matrix, right)

    beta = np.zeros(n + 1)
    current = log_posterior(beta)
    for _ in range(100):
        step = solve(curvature(beta)[0], gradient(beta))
        if np.abs(step).max() < 1e-10:
            beta = beta + step
            break  # the mode, to well below any difference shown
        # The posterior is log-concave, so a full Newton step is nearly always taken;
        # halving guards the first steps from far off. Near the mode the sum over many
        # pairings is only that precise: a step that loses less does not count as worse.
        slack = 1e-12 * max(1.0, abs(current))
        scale = 1.0
        while scale > 1e-6:
            candidate = beta + scale * step
            value = log_posterior(candidate)
            if value >= current - slack:
                break
            scale /= 2
        else:
            break  # no step improves it: the mode, to the arithmetic's precision
        beta, current = candidate, value
        if np.abs(scale * step).max() < 1e-10:
            break
    matrix, weights = curvature(beta)
    # Only differences of strength are measured: the scale is centred on the field's
    # mean, and so is the uncertainty (what all strengths share moves no one's rank).
    strengths = beta[:n] - beta[:n].mean()
    if not uncertainty:
        diagonal = matrix.diagonal()
        return Fit(
            players=players,
            strengths=strengths,
            variances=1 / diagonal[:n],
            advantage=float(beta[advantage]),
            advantage_sd=math.sqrt(1 / float(diagonal[advantage])),
        )
    if dense:
        covariance = np.linalg.inv(matrix.toarray())
        centring = np.eye(n) - 1 / n
        centred = centring @ covariance[:n, :n] @ centring
        return Fit(
            players=players,
            strengths=strengths,
            variances=np.diag(centred).copy(),
            advantage=float(beta[advantage]),
            advantage_sd=math.sqrt(float(covariance[advantage, advantage])),
            covariance=centred,
        )
    variances, advantage_variance = _sampled_variances(
        matrix, design, weights, precision, probes, np.random.default_rng(seed)
    )
    return Fit(
        players=players,
        strengths=strengths,
        variances=variances,
        advantage=float(beta[advantage]),
        advantage_sd=math.sqrt(advantage_variance),
    )


def _sampled_variances(
    matrix: sparse.csr_matrix,
    design: sparse.csr_matrix,
    weights: np.ndarray,
    precision: np.ndarray,
    probes: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    """Each strength's variance about the field's mean, and the advantage's, under the
    posterior N(mode, H^-1) (``H``: ``matrix``), without inverting H.

    ``r = X^T (sqrt(w) z1) + sqrt(p) z2`` (z standard normal; X the design, w the weights,
    p the prior's precision) has covariance H, so ``x = H^-1 r`` is an exact draw of the
    posterior's error; and ``y = r / diag(H)`` has the known covariance
    ``D^-1 H D^-1`` (D the diagonal). The variance is that known one plus the mean of
    ``x^2 - y^2`` over the draws, which stays small where y follows x closely."""
    import scipy.sparse as sparse

    n = matrix.shape[0] - 1
    diagonal = matrix.diagonal()
    # Drawn and solved in single precision (half the memory traffic), to a relative
    # residual of PROBE_TOLERANCE: far below the draws' own noise in a mean of squares.
    noise = rng.standard_normal((design.shape[0], probes), dtype=np.float32)
    noise *= np.sqrt(weights).astype(np.float32)[:, None]
    prior_noise = (np.sqrt(precision)[:, None] * rng.standard_normal((n + 1, probes))).astype(
        np.float32
    )
    right = design.T.astype(np.float32) @ noise + prior_noise
    exact = _conjugate_gradients(
        matrix.astype(np.float32), right, tolerance=PROBE_TOLERANCE
    ).astype(np.float64)
    simple = right.astype(np.float64) / diagonal[:, None]
    # The strengths' parts about their mean (the advantage's is its own).
    exact_centred = exact[:n] - exact[:n].mean(axis=0)
    simple_centred = simple[:n] - simple[:n].mean(axis=0)
    # Known: the covariance of y is C = D^-1 H D^-1; of y's part about the mean, for
    # player i, C_ii - 2 (C 1)_i / n + (1^T C 1) / n^2 (over the strengths only).
    scaled = sparse.diags(1 / diagonal[:n]) @ matrix[:n, :n] @ sparse.diags(1 / diagonal[:n])
    row_sums = np.asarray(scaled.sum(axis=1)).ravel()
    known = scaled.diagonal() - 2 * row_sums / n + row_sums.sum() / n**2
    variances = known + (exact_centred**2 - simple_centred**2).mean(axis=1)
    advantage = 1 / diagonal[n] + float((exact[n] ** 2 - simple[n] ** 2).mean())
    # A variance is positive: a draw's noise never takes one below the agent's own part.
    floor = 0.5 / diagonal[:n]
    return np.maximum(variances, floor), max(advantage, 0.5 / float(diagonal[n]))


def _conjugate_gradients(
    matrix: sparse.csr_matrix, right: np.ndarray, *, tolerance: float = SOLVE_TOLERANCE
) -> np.ndarray:
    """``matrix^-1 right`` for a symmetric positive definite sparse ``matrix``, by
    conjugate gradients preconditioned with its diagonal, for one right-hand side or a
    block of them (columns, each solved on its own, all at once), to a relative residual
    of ``tolerance``."""
    single = right.ndim == 1
    b = right[:, None] if single else right
    inverse_diagonal = (1 / matrix.diagonal())[:, None]
    x = np.zeros_like(b)
    residual = b.copy()
    preconditioned = inverse_diagonal * residual
    direction = preconditioned.copy()
    product = (residual * preconditioned).sum(axis=0)
    target = tolerance * np.linalg.norm(b, axis=0)
    for _ in range(10 * matrix.shape[0] + 100):
        if (np.linalg.norm(residual, axis=0) <= target).all():
            break
        moved = matrix @ direction
        curvature = (direction * moved).sum(axis=0)
        alpha = np.divide(product, curvature, out=np.zeros_like(product), where=curvature > 0)
        x += alpha * direction
        residual -= alpha * moved
        preconditioned = inverse_diagonal * residual
        next_product = (residual * preconditioned).sum(axis=0)
        beta = np.divide(next_product, product, out=np.zeros_like(product), where=product > 0)
        direction = preconditioned + beta * direction
        product = next_product
    return x[:, 0] if single else x


def _player_positions(players: tuple[Hashable, ...], keys: np.ndarray) -> np.ndarray:
    """Where each of ``keys`` is in ``players`` (a KeyError for one that is not): by a
    sorted search when both are integers (database ids), else by a dictionary."""
    integers = keys.dtype.kind in "iu" and all(
        isinstance(player, int | np.integer) for player in players
    )
    if not integers or not players:
        index = {player: i for i, player in enumerate(players)}
        return np.array([index[key] for key in keys.tolist()], dtype=np.intp)
    ids = np.array(players, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    found = order[np.minimum(np.searchsorted(ids, keys, sorter=order), len(ids) - 1)]
    missing = ids[found] != keys
    if missing.any():
        raise KeyError(keys[missing][0].item())
    return found.astype(np.intp)


def _places(matrix: sparse.csr_matrix, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Where entries (``rows``, ``columns``) are in ``matrix.data`` (sorted indices; every
    entry in the pattern)."""
    starts = matrix.indptr[rows]
    lengths = matrix.indptr[rows + 1] - starts
    # Within a row the column indices are sorted: search each row's own slice, all at once,
    # by offsetting every row's columns past the previous rows'.
    width = matrix.shape[1]
    keys = matrix.indices + width * np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    found = np.searchsorted(keys, columns + width * rows)
    assert (found >= starts).all() and (found < starts + lengths).all()
    return np.asarray(found)


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1 + np.tanh(0.5 * x)))
