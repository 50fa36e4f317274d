from __future__ import annotations

from referee.standings import (
    Standing,
    buchholz_scores,
    bye_points,
    record_duel,
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
    two_draws = Standing("two draws", points=2, draws=2, score=10)
    one_win = Standing("one win", points=2, wins=1, losses=1, score=4)
    same_win = Standing("same win", points=2, wins=1, losses=1, score=4)
    ahead = Standing("ahead", points=4, wins=2, score=1)
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

    def key(row: Standing) -> tuple[float, ...]:
        return standing_key(row, buchholz=buchholz[row.name])

    ordered = sorted([more_wins, level, stronger_field], key=key)

    assert [row.name for row in ordered] == ["level", "stronger field", "more wins"]
    assert shared_ranks(ordered, key) == [1, 1, 3]
