"""Openings: the random first moves that keep deterministic agents from replaying one
match, the same for both seat orders of a pair."""

from __future__ import annotations

import json

import pytest

from environments.base import replay
from environments.registry import environment_names, load_info, make_environment
from referee.duel import run_duel
from referee.openings import duel_openings
from referee.results import DuelResult
from tests.support.sandboxes import agent, player


def played(result: DuelResult) -> list[str]:
    """Each match as what makes it the match it is: its seats and its actions."""
    return [json.dumps([match.seats, match.actions]) for match in result.matches]


def test_two_deterministic_agents_play_no_match_twice(backend):
    sources = (agent("first_legal.py"), agent("first_legal.py"))

    result = run_duel("tic_tac_toe", sources, backend=backend, matches=10, seed=4)

    assert result.other_errors == 0, result.error_msg
    assert len(set(played(result))) == 10
    # The referee played the first two moves; the agents, every one after.
    for match in result.matches:
        assert match.opening == 2
        assert all(timing is None for step in match.timings[:2] for timing in step)
        assert all(any(timing is not None for timing in step) for step in match.timings[2:])


def test_without_an_opening_the_same_agents_repeat_their_matches(backend):
    # The check above can fail: what the referee did before openings.
    sources = (agent("first_legal.py"), agent("first_legal.py"))

    result = run_duel("tic_tac_toe", sources, backend=backend, matches=10, seed=4, opening_moves=0)

    assert len(set(played(result))) == 2


def test_both_matches_of_a_pair_share_an_opening_with_the_seats_swapped(backend):
    sources = (player("sum_to_10/optimal.py"), agent("first_legal.py"))

    result = run_duel("sum_to_10", sources, backend=backend, matches=10, seed=21)

    openings = [match.actions[: match.opening] for match in result.matches]
    for first, second in zip(result.matches[::2], result.matches[1::2], strict=True):
        assert openings[first.index] == openings[second.index]
        assert first.seats == [1, 2] and second.seats == [2, 1]
    # Five pairs, five openings: sum to 10 has nine of two moves.
    assert len({json.dumps(opening) for opening in openings[::2]}) == 5


def test_a_match_with_an_opening_replays_to_its_recorded_result(backend):
    sources = (agent("first_legal.py"), agent("random_agent.py"))

    result = run_duel("connect_four", sources, backend=backend, matches=4, seed=8)
    environment = make_environment("connect_four")

    for match in result.as_json()["matches"]:
        assert match["opening"] == 2
        states = replay(environment, match["seed"], match["actions"])
        assert states[-1]["terminal"] is True
        winner = states[-1]["winner"]
        assert match["result"] == (
            "DRAW" if winner is None else f"PLAYER_{match['seats'][winner]}_WIN"
        )


def test_spectators_see_the_opening_moves_as_the_first_steps(backend):
    events: list[dict] = []
    sources = (agent("first_legal.py"), agent("first_legal.py"))

    run_duel("tic_tac_toe", sources, backend=backend, matches=1, seed=2, progress=events.append)

    steps = [event for event in events if event["type"] == "step"]
    assert [event["step"] for event in steps[:3]] == [0, 1, 2]
    assert [event.get("opening", False) for event in steps[:3]] == [True, True, False]


def test_a_duels_openings_differ_while_the_game_has_new_ones():
    environment = make_environment("sum_to_10")

    openings = duel_openings(environment, duel_seed=3, moves=2, turns=12)

    # Nine openings of two moves exist: the first nine turns get all of them.
    assert len({json.dumps(opening) for opening in openings[:9]}) == 9
    assert all(len(opening) == 2 for opening in openings)
    assert openings == duel_openings(environment, duel_seed=3, moves=2, turns=12)
    assert openings[:4] == duel_openings(environment, duel_seed=3, moves=2, turns=4)
    assert openings != duel_openings(environment, duel_seed=4, moves=2, turns=12)


def test_once_every_opening_was_given_a_duel_gives_them_all_again():
    environment = make_environment("connect_four")

    # Forty-nine openings of two moves; a 200-match duel has 100 turns.
    openings = [json.dumps(opening) for opening in duel_openings(
        environment, duel_seed=5, moves=2, turns=100
    )]  # fmt: skip

    assert len(set(openings[:49])) == 49
    assert set(openings[49:98]) == set(openings[:49])
    assert openings[49:98] != openings[:49]  # a new order


def test_a_game_whose_every_opening_ends_the_match_gets_none():
    # Ten additions of at least 1 reach 10 at the latest: every such opening ends the match
    # (the game's tree is small, so the walk that proves it is quick).
    openings = duel_openings(make_environment("sum_to_10"), duel_seed=1, moves=10, turns=3)

    assert openings == [[], [], []]


def test_a_game_whose_seats_move_at_once_gets_each_pair_of_moves_once():
    openings = duel_openings(make_environment("rock_paper_scissors"), duel_seed=2, moves=1, turns=9)

    assert sorted(opening[0] for opening in openings) == sorted(
        [a, b] for a in ("paper", "rock", "scissors") for b in ("paper", "rock", "scissors")
    )


def test_an_opening_never_ends_the_match():
    environment = make_environment("tic_tac_toe")

    # Five random marks are three in a row for X now and then: such a draw is drawn again.
    openings = duel_openings(environment, duel_seed=1, moves=5, turns=40)

    assert all(len(opening) == 5 for opening in openings)
    for opening in openings:
        environment.reset(0)
        for step in opening:
            environment.step(
                {seat: action for seat, action in enumerate(step) if action is not None}
            )
        assert not environment.is_terminal()


@pytest.mark.parametrize("name", environment_names())
def test_every_game_without_chance_played_in_turns_has_an_opening(name):
    info = load_info(name)
    environment = make_environment(name)
    deterministic_turns = info.players > 1 and not environment.simultaneous

    assert (info.opening_moves > 0) == deterministic_turns
