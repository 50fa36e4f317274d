"""The players of one-player games load as intended and play whole evaluations legally,
each copied alone into a sandbox (only the SDK importable)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from arena_sdk import Agent

from referee.evaluation import run_evaluation
from referee.scores import episode_seeds
from tests.example_players.test_example_players_play_legally import ONE_PLAYER_AGENTS
from tests.support.sandboxes import player


@pytest.mark.parametrize("relative_path", sorted(ONE_PLAYER_AGENTS))
def test_it_loads_the_intended_agent(
    relative_path: str, load_player: Callable[[str], Agent]
) -> None:
    adapter, name = ONE_PLAYER_AGENTS[relative_path]
    agent = load_player(relative_path)
    assert isinstance(agent, adapter)
    assert agent.describe() == name


@pytest.mark.parametrize("relative_path", sorted(ONE_PLAYER_AGENTS))
def test_it_plays_an_evaluation_without_a_fault(relative_path: str, backend) -> None:
    environment = relative_path.split("/")[0]
    evaluation = run_evaluation(
        environment, player(relative_path), backend=backend, seeds=episode_seeds(1, 2)
    )

    assert evaluation.infrastructure_error == ""
    assert evaluation.faults == []
    assert all(episode.actions for episode in evaluation.episodes)
