"""The batch fit behind the published leaderboard, on simulated match histories."""

from __future__ import annotations

import math
import random

import pytest

from tournament_manager.bradley_terry import ELO_MEAN, ELO_PER_UNIT, Games, fit


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
