"""Duels of more than two players: seats rotate fairly, scores rank the players, and a
game with a ``players`` setting plays any count it allows."""

from __future__ import annotations

from collections import Counter

import pytest

from environments.base import replay
from environments.registry import make_environment
from referee.duel import run_duel
from referee.results import Outcome, outcome_of, ranks_from_scores, seat_rotation
from referee.validation import validate
from tests.support.sandboxes import agent, player


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_it_sits_every_player_in_every_seat_equally_often_over_a_multiple_of_the_seats(
    players,
):
    rotations = [seat_rotation(players, index) for index in range(2 * players)]

    for rotation in rotations:
        assert sorted(rotation) == list(range(1, players + 1))
    for seat in range(players):
        assert Counter(rotation[seat] for rotation in rotations) == dict.fromkeys(
            range(1, players + 1), 2
        )


def test_it_keeps_the_two_player_order_of_the_first_player_first_in_even_matches():
    assert [seat_rotation(2, index) for index in range(4)] == [[1, 2], [2, 1], [1, 2], [2, 1]]


def test_it_sits_players_at_most_once_more_in_a_seat_when_matches_are_not_a_multiple():
    rotations = [seat_rotation(4, index) for index in range(6)]

    for seat in range(4):
        counts = Counter(rotation[seat] for rotation in rotations)
        assert max(counts.values()) - min(counts.get(p, 0) for p in range(1, 5)) == 1


def test_it_ranks_players_by_score_with_ties_sharing_a_rank():
    assert ranks_from_scores([1.0, 0.5, 0.5, 0.0]) == [1, 2, 2, 4]
    assert outcome_of([1.0, 0.5, 0.5, 0.0]) is Outcome.RANKED
    assert outcome_of([0.5, 0.5, 0.5]) is Outcome.DRAW
    assert outcome_of([1.0, 0.0]) is Outcome.PLAYER_1_WIN
    assert outcome_of([0.0, 1.0]) is Outcome.PLAYER_2_WIN


def test_it_plays_four_agents_with_seats_rotating_and_records_every_players_scores(backend):
    sources = [
        player("lowest_unique/low_bidder.py"),
        player("lowest_unique/random_player.py"),
        agent("random_agent.py"),
        player("lowest_unique/random_player.py"),
    ]

    result = run_duel("lowest_unique", sources, backend=backend, seed=3, matches=8)
    document = result.as_json()

    assert not result.infrastructure_error, result.error_msg
    assert document["num_players"] == 4
    assert len(document["players"]) == 4
    assert document["errors"] == [0, 0, 0, 0]
    assert [match["seats"] for match in document["matches"]] == [
        seat_rotation(4, index) for index in range(8)
    ]
    for match in result.matches:
        # Each match's scores are the share of the others each player beat: they sum to 2.
        assert sum(match.scores) == pytest.approx(2.0)
        assert match.result in (Outcome.RANKED, Outcome.DRAW)
        states = replay(make_environment("lowest_unique"), match.seed, match.actions)
        assert states[-1]["terminal"]
        assert len(match.actions[0]) == 4
    assert document["scores"] == pytest.approx(
        [sum(match.scores[number] for match in result.matches) for number in range(4)]
    )
    assert document["ranks"] == ranks_from_scores(document["scores"])
    assert sum(document["wins"]) + document["draws"] <= 8


@pytest.mark.parametrize("players", [3, 6])
def test_it_sets_the_game_up_for_the_count_of_agents(backend, players):
    sources = [player("lowest_unique/random_player.py")] * players

    result = run_duel("lowest_unique", sources, backend=backend, seed=5, matches=players)

    assert not result.infrastructure_error, result.error_msg
    assert all(len(match.seats) == players for match in result.matches)
    assert all(len(step) == players for match in result.matches for step in match.actions)


def test_it_refuses_a_count_of_agents_the_game_does_not_seat(backend):
    with pytest.raises(ValueError, match="for 2 players, not 3"):
        run_duel("tic_tac_toe", [agent("random_agent.py")] * 3, backend=backend, matches=1)
    with pytest.raises(ValueError, match="players must be 3 to 6, got 2"):
        run_duel("lowest_unique", [agent("random_agent.py")] * 2, backend=backend, matches=1)


def test_it_validates_an_agent_by_self_play_in_every_seat(backend):
    validation = validate(
        "lowest_unique", player("lowest_unique/random_player.py"), backend=backend
    )

    assert validation.passed, validation.message
    assert len(validation.duel.players) == 4
    assert all(len(match.seats) == 4 for match in validation.duel.matches)
