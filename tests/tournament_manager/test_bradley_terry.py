"""The batch fit behind the published leaderboard, on simulated match histories."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable

import numpy as np
import pytest
from scipy.special import ndtri

from tournament_manager.bradley_terry import (
    ELO_MEAN,
    ELO_PER_UNIT,
    SURELY_AHEAD,
    Fit,
    Games,
    GameTable,
    fit,
)


def simulate(
    strengths: list[float], *, games: int, advantage: float = 0.0, seed: int = 1
) -> list[Games]:
    """Every ordered pair plays ``games`` matches, ``first`` moving first."""
    rng = random.Random(seed)
    records = []
    for first, one in enumerate(strengths):
        for second, two in enumerate(strengths):
            if first == second:
                continue
            chance = 1 / (1 + math.exp(-(one - two + advantage)))
            wins = sum(rng.random() < chance for _ in range(games))
            records.append(Games(first, second, games, wins))
    return records


def test_it_recovers_the_order_and_the_strengths_of_a_graded_field():
    strengths = [2.0, 1.4, 0.8, 0.2, -0.4, -1.0, -1.6, -2.2]

    result = fit(range(8), simulate(strengths, games=40))

    assert result.ranks() == {player: player + 1 for player in range(8)}
    mean = sum(strengths) / len(strengths)
    for player, strength in enumerate(strengths):
        # Within three standard deviations of the truth (on the fit's own scale, whose
        # mean the prior pins near 0 as the field's is).
        expected = ELO_MEAN + ELO_PER_UNIT * (strength - mean)
        assert abs(result.elo(player) - expected) < 3 * result.elo_sd(player) + 15


def test_it_finds_the_first_movers_advantage_and_blames_no_one_for_it():
    result = fit(range(4), simulate([0.0, 0.0, 0.0, 0.0], games=200, advantage=0.8))

    assert result.advantage == pytest.approx(0.8, abs=3 * result.advantage_sd)
    assert all(abs(result.elo(player) - ELO_MEAN) < 40 for player in range(4))


def test_unbalanced_seats_do_not_bias_the_order():
    # 0 always moved first against 1 and won 60 %: exactly the first mover's edge, as the
    # other pairs (each seat order played as often) show; 0 and 1 are equals.
    records = [
        record
        for record in simulate([0.0, 0.0, 0.0], games=300, advantage=0.4, seed=3)
        if {record.first, record.second} != {0, 1}
    ]

    result = fit(range(3), [*records, Games(0, 1, 100, 60)])

    assert abs(result.elo(0) - result.elo(1)) < 2 * result.elo_sd(0)
    assert result.advantage == pytest.approx(0.4, abs=3 * result.advantage_sd)


def test_a_player_who_won_everything_stays_finite_and_uncertain():
    records = [Games(0, 1, 10, 10), Games(1, 0, 10, 0), Games(1, 2, 10, 5), Games(2, 1, 10, 5)]

    result = fit(range(3), records)

    assert math.isfinite(result.elo(0))
    assert result.elo(0) > result.elo(1)
    assert result.elo_sd(0) > result.elo_sd(1)


def test_a_single_lucky_win_leaves_a_newcomer_with_a_wide_rank_interval():
    field = simulate([1.5, 0.5, -0.5, -1.5], games=30, seed=7)

    result = fit(range(5), [*field, Games(4, 0, 1, 1)])

    intervals = result.rank_intervals()
    assert intervals[4][0] == 1 and intervals[4][1] >= 4
    assert result.elo_sd(4) > 2 * max(result.elo_sd(player) for player in range(4))
    # Among the well-measured ones the top is known.
    assert result.rank_intervals(among=range(4))[0] == (1, 1)


def test_well_separated_players_get_exact_ranks_and_equals_share_the_interval():
    separated = fit(range(3), simulate([3.0, 0.0, -3.0], games=50))
    equals = fit(range(3), simulate([0.0, 0.0, 0.0], games=5))

    assert separated.rank_intervals() == {0: (1, 1), 1: (2, 2), 2: (3, 3)}
    assert all(interval == (1, 3) for interval in equals.rank_intervals().values())


def test_ranks_among_a_subset_leave_the_others_out():
    result = fit(range(3), simulate([1.0, 0.0, -1.0], games=100))

    assert result.ranks(among={0, 2}) == {0: 1, 2: 2}


def test_draws_count_half_for_each():
    result = fit(["x", "y"], [Games("x", "y", 10, 5.0), Games("y", "x", 10, 5.0)])

    assert result.elo("x") == pytest.approx(result.elo("y"))
    assert result.elo("x") == pytest.approx(ELO_MEAN)


# --- a field too large for its covariance --------------------------------------------------


def neighbours_history(size: int, *, seed: int) -> list[Games]:
    """A ladder's history: each agent plays mostly its neighbours in strength."""
    rng = random.Random(seed)
    strengths = sorted((rng.gauss(0, 1.5) for _ in range(size)), reverse=True)
    counts: dict[tuple[int, int], list[float]] = {}
    for _ in range(size * 40):
        one = rng.randrange(size)
        two = one + rng.choice([-3, -2, -1, 1, 2, 3]) if rng.random() < 0.8 else rng.randrange(size)
        if not 0 <= two < size or two == one:
            continue
        chance = 1 / (1 + math.exp(-(strengths[one] - strengths[two] + 0.1)))
        record = counts.setdefault((one, two), [0, 0.0])
        record[0] += 1
        record[1] += rng.random() < chance
    return [Games(one, two, int(games), points) for (one, two), (games, points) in counts.items()]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_large_fields_fit_agrees_with_the_whole_covariances(seed):
    """The same field fitted both ways: with its covariance formed whole, and as a field
    beyond ``DENSE_LIMIT`` is (sparse solves, sampled variances, independent errors). The
    strengths are the same; the uncertainties and the rank intervals' ends within the
    tolerance BENCHMARKS.md states."""
    games = neighbours_history(400, seed=seed)

    whole = fit(range(400), games)
    large = fit(range(400), games, dense_limit=0)

    assert whole.covariance is not None and large.covariance is None
    assert np.abs(whole.strengths - large.strengths).max() < 1e-9
    assert large.advantage == pytest.approx(whole.advantage, abs=1e-9)
    ratio = np.sqrt(large.variances / whole.variances)
    assert np.median(np.abs(ratio - 1)) < 0.05 and np.abs(ratio - 1).max() < 0.3
    exact, estimated = whole.rank_intervals(), large.rank_intervals()
    ends = np.array([[*exact[player], *estimated[player]] for player in range(400)])
    assert np.abs(ends[:, :2] - ends[:, 2:]).mean() < 2.0
    assert large.ranks() == whole.ranks()


def test_strengths_alone_are_the_same_strengths():
    """A ladder's order needs no uncertainty: the fit without it finds the same strengths."""
    games = neighbours_history(300, seed=3)

    whole = fit(range(300), games)
    strengths_only = fit(range(300), games, uncertainty=False)

    assert whole.covariance is not None and strengths_only.covariance is None
    assert np.abs(whole.strengths - strengths_only.strengths).max() < 1e-9
    assert strengths_only.ranks() == whole.ranks()


def test_a_table_of_games_is_fitted_as_the_same_games_one_by_one():
    """A large field's history comes as columns straight from the database (revision ids,
    found by a sorted search); a few games come one by one: the same fit either way."""
    games = neighbours_history(300, seed=4)
    ids = [1000 + 7 * player for player in range(300)]
    id_of: dict[Hashable, int] = dict(enumerate(ids))
    renamed = [
        Games(id_of[game.first], id_of[game.second], game.games, game.first_points)
        for game in games
    ]
    half = len(renamed) // 2

    one_by_one = fit(ids, renamed, dense_limit=0)
    table = fit(ids, GameTable.of(renamed[:half]) + GameTable.of(renamed[half:]), dense_limit=0)

    assert np.array_equal(one_by_one.strengths, table.strengths)
    assert np.array_equal(one_by_one.variances, table.variances)
    with pytest.raises(KeyError):
        fit(ids[1:], GameTable.of(renamed))


@pytest.mark.parametrize("seed", range(40))
def test_a_large_fields_intervals_count_as_comparing_every_pair(seed):
    """A large field's rank intervals search groups of like variance instead of comparing
    every pair: the same counts as every pair compared, on fields of mixed certainty
    (ties, players outside the field, one far more uncertain than the rest)."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 2500))
    strengths = np.round(rng.normal(size=size) * rng.choice([0.01, 1.0, 3.0]), 2)
    variances = np.exp(rng.normal(size=size) * rng.choice([0.1, 2.0]))
    variances[rng.integers(size)] = 50.0
    result = Fit(
        players=tuple(range(size)),
        strengths=strengths,
        variances=variances,
        advantage=0.0,
        advantage_sd=1.0,
    )
    field = np.sort(rng.choice(size, size=int(rng.integers(0, size + 1)), replace=False))
    sure = ndtri(SURELY_AHEAD)

    searched = result._independent_counts(field, sure)
    compared = result._block_counts(field, sure)

    assert np.array_equal(searched[0], compared[0])
    assert np.array_equal(searched[1], compared[1])
