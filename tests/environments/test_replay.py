from __future__ import annotations

import json
import random

import pytest

from environments.base import JSON, Environment, replay
from environments.registry import make_environment

GAMES = ["connect_four", "quarto", "rock_paper_scissors", "sum_to_10", "tic_tac_toe"]
#: Every game, with those of more than two players.
REPLAYED = [*GAMES, "lowest_unique"]
#: Longest possible match of each game, in steps.
MAX_STEPS = {
    "connect_four": 42,
    "quarto": 17,
    "rock_paper_scissors": 30,
    "sum_to_10": 10,
    "tic_tac_toe": 9,
    "lowest_unique": 5,
}


def random_match(
    environment: Environment, seed: int, rng: random.Random
) -> tuple[list[list[JSON]], list[dict[str, JSON]]]:
    """Play random legal actions to the end; return the replay actions and every state."""
    environment.reset(seed)
    steps: list[list[JSON]] = []
    states = [environment.state()]
    while not environment.is_terminal():
        assert len(steps) < MAX_STEPS[environment.name]
        actions = {
            player: rng.choice(environment.legal_actions(player))
            for player in environment.to_move()
        }
        environment.step(actions)
        steps.append([actions.get(player) for player in range(environment.num_players)])
        states.append(environment.state())
    return steps, states


def only_json_types(value: JSON) -> bool:
    if isinstance(value, dict):
        return all(isinstance(key, str) and only_json_types(item) for key, item in value.items())
    if isinstance(value, list):
        return all(only_json_types(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)


@pytest.mark.parametrize("name", GAMES)
def test_it_ends_200_random_matches_with_one_point_shared_out(name: str) -> None:
    environment = make_environment(name)
    rng = random.Random(name)
    outcomes = set()

    for seed in range(200):
        steps, states = random_match(environment, seed, rng)

        assert environment.is_terminal()
        assert environment.to_move() == []
        assert sum(environment.scores()) == 1
        assert sorted(environment.scores()) in ([0.0, 1.0], [0.5, 0.5])
        assert states[-1]["terminal"] is True
        assert states[-1]["winner"] == environment.winner()
        assert len(steps) <= MAX_STEPS[name]
        outcomes.add(tuple(environment.scores()))

    assert (1.0, 0.0) in outcomes
    assert (0.0, 1.0) in outcomes


@pytest.mark.parametrize("players", [3, 4, 6])
def test_it_ends_200_random_matches_of_more_players_with_the_points_shared_by_rank(
    players: int,
) -> None:
    environment = make_environment("lowest_unique", players=players)
    rng = random.Random(players)
    winners = set()

    for seed in range(200):
        random_match(environment, seed, rng)

        scores = environment.scores()
        # Each of the N(N-1)/2 pairs shares out one point: the scores sum to N/2.
        assert sum(scores) == pytest.approx(players / 2)
        assert all(0.0 <= score <= 1.0 for score in scores)
        winner = environment.winner()
        if winner is not None:
            assert scores[winner] == 1.0
        winners.add(winner)

    assert winners >= set(range(players))


@pytest.mark.parametrize("name", REPLAYED)
def test_it_replays_a_match_to_identical_json_states(name: str) -> None:
    rng = random.Random(f"replay {name}")
    for seed in range(20):
        steps, played_states = random_match(make_environment(name), seed, rng)

        first = replay(make_environment(name), seed, steps)
        second = replay(make_environment(name), seed, steps)

        assert first == second == played_states
        for state in first:
            assert only_json_types(state)
            for key in ("to_move", "winner", "terminal", "last_action"):
                assert key in state
            assert json.loads(json.dumps(state)) == state


@pytest.mark.parametrize("name", REPLAYED)
def test_it_reuses_an_environment_across_matches(name: str) -> None:
    environment = make_environment(name)
    fresh_state = environment.state()
    random_match(environment, 1, random.Random(3))

    environment.reset(1)

    assert environment.state() == fresh_state
    assert environment.step_count == 0
