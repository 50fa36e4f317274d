from __future__ import annotations

from collections import Counter
from fractions import Fraction

from referee.match_points import score_text
from referee.results import score_total
from referee.standings import (
    Standing,
    buchholz_scores,
    bye_points,
    record_duel,
    record_group,
    shared_ranks,
    standing_key,
)


def test_it_gives_2_points_a_win_1_a_draw_and_adds_match_scores():
    alice, bob = Standing("alice"), Standing("bob")
    record_duel(alice, bob, result="PLAYER_1_WIN", first_score=3, second_score=1)
    record_duel(alice, bob, result="DRAW", first_score=2, second_score=2)
    assert (alice.points, alice.wins, alice.draws, alice.losses, alice.score) == (3, 1, 1, 0, 5)
    assert (bob.points, bob.wins, bob.draws, bob.losses, bob.score) == (1, 0, 1, 1, 3)


def test_it_scores_a_bye_as_a_won_duel():
    assert bye_points(2) == 4


def test_it_breaks_ties_on_points_by_wins_then_score_and_equal_players_share_a_rank():
    two_draws = Standing("two draws", points=2, draws=2, totals=Counter({5: 2}))
    one_win = Standing("one win", points=2, wins=1, losses=1, totals=Counter({3: 1, 1: 1}))
    same_win = Standing("same win", points=2, wins=1, losses=1, totals=Counter({4: 1}))
    ahead = Standing("ahead", points=4, wins=2, totals=Counter({0.5: 2}))
    ordered = sorted([two_draws, one_win, same_win, ahead], key=standing_key)
    assert [row.name for row in ordered] == ["ahead", "one win", "same win", "two draws"]
    assert shared_ranks(ordered, standing_key) == [1, 2, 2, 4]


def test_it_sums_the_opponents_points_for_buchholz_and_counts_a_bye_as_the_players_own():
    points = {"alice": 4, "bob": 2, "carol": 2, "dave": 0}
    meetings = [("alice", "bob"), ("carol", "dave"), ("alice", "carol"), ("bob", "dave")]

    scores = buchholz_scores(points, meetings=meetings, byes={"bob": 1})

    assert scores == {"alice": 4, "bob": 6, "carol": 4, "dave": 4}


def test_it_breaks_swiss_ties_on_points_by_buchholz_before_wins():
    more_wins = Standing("more wins", points=4, wins=2)
    stronger_field = Standing("stronger field", points=4, wins=1, draws=2)
    level = Standing("level", points=4, wins=1, draws=2)
    buchholz = {"more wins": 3, "stronger field": 6, "level": 6}

    def key(row: Standing) -> tuple[int | Fraction, ...]:
        return standing_key(row, buchholz=buchholz[row.name])

    ordered = sorted([more_wins, level, stronger_field], key=key)

    assert [row.name for row in ordered] == ["level", "stronger field", "more wins"]
    assert shared_ranks(ordered, key) == [1, 1, 3]


def stored(numerator: int, denominator: int = 3) -> float:
    """A duel's total as the referee stores it: to 9 places (32/3: 10.666666667)."""
    return score_total([float(Fraction(numerator, denominator))])


def test_it_adds_totals_of_thirds_exactly_and_shows_them_as_the_game_means_them():
    ava, ben = Standing("ava"), Standing("ben")
    # Each duel's total rounded to 9 places; summed as floats they gave 42.333333334
    # and 43.000000001000004.
    for ava_total, ben_total in ((32, 44), (32, 44), (32, 41)):
        record_duel(
            ben,
            ava,
            result="PLAYER_1_WIN",
            first_score=stored(ben_total),
            second_score=stored(ava_total),
        )
    record_group([ava, Standing("cy")], scores=[stored(31), stored(25)])

    assert ava.score == Fraction(127, 3) and ben.score == 43
    assert (score_text(ava.score), score_text(ben.score)) == ("42⅓", "43")


def test_equal_exact_totals_reached_by_different_sums_tie_on_score():
    one_duel, three_duels = Standing("one duel"), Standing("three duels")
    record_duel(
        one_duel, Standing("x"), result="PLAYER_2_WIN", first_score=stored(25), second_score=9
    )
    for total in (stored(8), stored(8), 3.0):
        record_duel(
            three_duels, Standing("y"), result="PLAYER_2_WIN", first_score=total, second_score=9
        )

    assert stored(25) != stored(8) + stored(8) + 3.0  # 8.333333333 against 8.333333334
    ordered = sorted([three_duels, one_duel], key=standing_key)
    assert shared_ranks(ordered, standing_key) == [1, 1]
    assert score_text(one_duel.score) == score_text(three_duels.score) == "8⅓"
