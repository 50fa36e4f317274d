from __future__ import annotations

from referee.standings import Standing, bye_points, record_duel, shared_ranks, standing_key


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
