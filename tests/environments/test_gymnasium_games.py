"""Gymnasium environments as one-player games: JSON observations, discrete actions,
episodes that a seed and the actions replay exactly."""

from __future__ import annotations

import json
import random

import pytest

from environments.base import IllegalAction, replay
from environments.gymnasium_game import GymnasiumEnvironment
from environments.registry import InvalidEnvironmentInfo, load_info, make_environment

GYMNASIUM_GAMES = {
    "cartpole": ("CartPole-v1", 2, 500),
    "acrobot": ("Acrobot-v1", 3, 500),
    "mountain_car": ("MountainCar-v0", 3, 200),
    "frozen_lake": ("FrozenLake-v1", 4, 100),
}


def random_episode(name: str, seed: int) -> tuple[list[list[int]], list[dict]]:
    environment = make_environment(name)
    environment.reset(seed)
    chooser = random.Random(seed)
    actions, states = [], [environment.state()]
    while not environment.is_terminal():
        action = chooser.choice(environment.legal_actions(0))
        environment.step({0: action})
        actions.append([action])
        states.append(environment.state())
    return actions, states


@pytest.mark.parametrize("name", sorted(GYMNASIUM_GAMES))
def test_it_reads_a_one_player_game_from_info_yml(name: str) -> None:
    gymnasium_id, action_count, max_steps = GYMNASIUM_GAMES[name]
    info = load_info(name)
    environment = make_environment(name)

    assert isinstance(environment, GymnasiumEnvironment)
    assert (info.players, info.gymnasium) == (1, gymnasium_id)
    assert environment.num_players == 1
    assert environment.to_move() == [0]
    assert environment.legal_actions(0) == list(range(action_count))
    assert environment.max_steps == max_steps


@pytest.mark.parametrize("name", sorted(GYMNASIUM_GAMES))
def test_it_replays_an_episode_from_its_seed_and_actions(name: str) -> None:
    actions, states = random_episode(name, seed=12)

    assert states[-1]["terminated"] or states[-1]["truncated"]
    assert replay(make_environment(name), 12, actions) == states
    # The observations are plain JSON, identical after a round trip.
    assert json.loads(json.dumps(states)) == states


def test_it_gives_other_episodes_for_other_seeds() -> None:
    starts = {tuple(random_episode("cartpole", seed)[1][0]["observation"]) for seed in range(5)}

    assert len(starts) == 5


def test_it_scores_the_return_and_counts_the_time_limit_as_the_end() -> None:
    environment = make_environment("mountain_car")
    environment.reset(3)
    while not environment.is_terminal():
        environment.step({0: 1})  # never accelerating never reaches the flag

    assert environment.state()["truncated"] and not environment.state()["terminated"]
    assert environment.step_count == 200
    assert environment.scores() == [-200.0]
    assert environment.to_move() == []


def test_it_refuses_an_action_outside_the_action_space() -> None:
    environment = make_environment("cartpole")

    with pytest.raises(IllegalAction, match=r"out of range 0\.\.1"):
        environment.step({0: 2})
    with pytest.raises(IllegalAction, match="must be an integer"):
        environment.step({0: "left"})
    assert environment.step_count == 0


def test_it_shows_the_lake_in_the_text_trace() -> None:
    environment = make_environment("frozen_lake")
    environment.reset(1)

    text = environment.render_text()
    assert text.splitlines()[-4:] == ["@FFF", "FHFH", "FFFH", "HFFG"]
    assert environment.render_html().startswith('<div class="frozen-lake">')


def test_it_refuses_a_gymnasium_game_with_two_players(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "pole_duel"
    folder.mkdir()
    info = (load_info("cartpole").static_dir.parent / "info.yml").read_text()
    (folder / "info.yml").write_text(info.replace("players: 1", "players: 2"))
    monkeypatch.setattr("environments.registry.ENVIRONMENTS_DIR", tmp_path)

    with pytest.raises(InvalidEnvironmentInfo, match="players: 1"):
        load_info.__wrapped__("pole_duel")
