"""Equal scores are equal: a duel's totals are compared as the game means them, so two
players with the same points share a rank, however their fractional match scores were
added up (issue 26: two lowest-unique players at 25/6 each were ranked 2 and 3)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

from referee.results import (
    DuelResult,
    MatchRecord,
    Outcome,
    outcome_of,
    ranks_from_scores,
    score_total,
)
from referee.standings import Standing, record_group, shared_ranks, standing_key

#: The case met in a lowest-unique duel: 25/6 in two orders, 4.1666...67 and 4.1666...66.
POINTS = [1 / 2, 1 / 3, 1 / 3, 1.0, 1.0, 1.0]


def duel_of(per_player: list[list[float]]) -> DuelResult:
    """A duel whose match ``i`` gave player ``p`` the score ``per_player[p][i]``."""
    players = len(per_player)
    matches = [
        MatchRecord(
            index=index,
            seed=index,
            seats=list(range(1, players + 1)),
            scores=[per_player[player][index] for player in range(players)],
        )
        for index in range(len(per_player[0]))
    ]
    for match in matches:
        match.result = outcome_of(match.scores)
    return DuelResult(
        environment="lowest_unique",
        players=[f"p{n}" for n in range(1, players + 1)],
        seed=1,
        matches=matches,
    )


def test_the_same_points_in_another_order_are_the_same_total_and_rank():
    assert sum(POINTS) != sum(reversed(POINTS))  # what floats do

    duel = duel_of([POINTS, list(reversed(POINTS)), [0.0] * 6, [2 / 3] * 6])

    # Exactly 25/6, rounded as the referee rounds a sum of floats.
    assert duel.scores[0] == duel.scores[1] == score_total([float(Fraction(25, 6))])
    assert duel.as_json()["ranks"] == [1, 1, 4, 3]
    assert duel.result is Outcome.RANKED


def test_two_players_level_on_points_draw():
    duel = duel_of([POINTS, list(reversed(POINTS))])

    assert duel.result is Outcome.DRAW
    assert duel.as_json()["ranks"] == [1, 1]


def test_standings_count_equal_totals_as_a_draw_and_rank_them_together():
    one, two, three = Standing("one"), Standing("two"), Standing("three")
    duel = duel_of([POINTS, list(reversed(POINTS)), [0.0] * 6])

    record_group([one, two, three], scores=duel.scores)
    # The same points again, reached through other sums of the same fractions.
    record_group([one, two, three], scores=[sum(POINTS), sum(reversed(POINTS)), 0.0])

    assert (one.draws, two.draws) == (2, 2) and one.wins == two.wins == 2
    ordered = sorted([three, two, one], key=standing_key)
    assert shared_ranks(ordered, standing_key) == [1, 1, 3]


def test_any_order_of_any_fractional_points_gives_the_same_ranks():
    """Property, over 2,000 seeded random duels of 2 to 6 players: shuffling the order
    in which each player's match scores are added changes no total, no rank, no result;
    and players whose scores are the same exact fractions tie."""
    shares = [
        Fraction(numerator, denominator)
        for denominator in (2, 3, 4, 6, 12)
        for numerator in range(denominator + 1)
    ]
    generator = random.Random(26)
    for _ in range(2000):
        players, matches = generator.randint(2, 6), generator.randint(1, 12)
        exact = [[generator.choice(shares) for _ in range(matches)] for _ in range(players)]
        as_floats = [[float(share) for share in row] for row in exact]
        shuffled = [generator.sample(row, len(row)) for row in as_floats]
        # The columns are matches: shuffling a player's row reorders only its own sum.
        first, second = duel_of(as_floats), duel_of(shuffled)
        assert first.scores == second.scores
        totals = [sum(row, Fraction(0)) for row in exact]
        assert ranks_from_scores(first.scores) == [
            1 + sum(other > total for other in totals) for total in totals
        ]
        for a, b in itertools.combinations(range(players), 2):
            assert (first.scores[a] == first.scores[b]) == (totals[a] == totals[b])
