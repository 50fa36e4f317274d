from __future__ import annotations

import pytest

from environments.base import IllegalAction, replay
from environments.lowest_unique.environment import LowestUnique, round_winner


def play(rounds: list[list[int]], environment: LowestUnique | None = None) -> LowestUnique:
    environment = environment or LowestUnique()
    for picks in rounds:
        environment.step(dict(enumerate(picks)))
    return environment


def test_it_scores_the_lowest_number_picked_once():
    assert round_winner([1, 1, 2, 5]) == 2
    assert round_winner([3, 1, 4, 4]) == 1
    assert round_winner([2, 2, 3, 3]) is None


def test_it_seats_four_players_by_default_and_three_to_six_by_its_setting():
    assert LowestUnique().num_players == 4
    assert LowestUnique({"players": 3}).to_move() == [0, 1, 2]
    assert LowestUnique({"players": 6}).num_players == 6
    for players in (2, 7, "4"):
        with pytest.raises(ValueError, match="players"):
            LowestUnique({"players": players})


def test_it_ends_after_its_rounds_and_ranks_by_points_with_ties_sharing():
    environment = play([[1, 1, 2, 5], [3, 1, 4, 4], [2, 2, 3, 3], [1, 2, 3, 3], [5, 5, 4, 4]])

    assert environment.is_terminal()
    assert environment.points == [1, 1, 1, 0]
    assert environment.winner() is None
    # Each player's share of the others beaten on points, a tie counting half.
    assert environment.scores() == pytest.approx([2 / 3, 2 / 3, 2 / 3, 0.0])
    assert environment.to_move() == []
    assert "Shared first place" in environment.render_text()


def test_it_scores_a_sole_leader_one_and_tied_players_half_against_each_other():
    environment = play([[1, 2, 2, 2]] * 4 + [[3, 2, 1, 3]], LowestUnique())

    assert environment.points == [4, 0, 1, 0]
    assert environment.scores() == pytest.approx([1.0, 1 / 6, 2 / 3, 1 / 6])
    assert environment.winner() == 0
    assert "Player 1 wins" in environment.render_html()


def test_it_refuses_numbers_out_of_range_and_non_integers_without_changing_anything():
    environment = LowestUnique()
    before = environment.state()
    for action in (0, 6, "1", True, 1.0, None):
        with pytest.raises(IllegalAction) as refused:
            environment.step({0: 1, 1: 1, 2: action, 3: 1})
        assert refused.value.player == 2
    assert environment.state() == before


def test_it_shows_each_player_its_seat_and_the_count_of_players():
    environment = play([[1, 2, 3, 4]])

    observation = environment.observation(2)
    assert observation["seat"] == 2
    assert observation["players"] == 4
    assert observation["history"] == [[1, 2, 3, 4]]
    assert "You are player 3 of 4" in environment.render_observation(observation, 2)


def test_it_replays_a_match_from_its_seed_and_actions():
    actions = [[1, 2, 3, 4], [2, 2, 1, 5], [5, 4, 3, 3], [1, 1, 1, 1], [4, 3, 2, 1]]

    states = replay(LowestUnique(), 0, actions)

    assert len(states) == 6
    assert states[-1]["terminal"]
    assert states[-1]["points"] == play(actions).points
