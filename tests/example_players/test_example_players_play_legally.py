"""Every example player loads as the intended agent and plays only legal actions."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from arena_sdk import Agent, FunctionAgent, KaggleAgent, PlayerAgent

from environments.registry import environment_names

EXAMPLE_PLAYERS_DIR = Path(__file__).resolve().parents[2] / "example_players"
SDK_DIR = Path(__file__).resolve().parents[2] / "sdk"

# File -> (adapter class, name the agent reports). Keeping this table complete is
# checked below, so a new player cannot be added without saying what it should load as.
EXPECTED_AGENTS: dict[str, tuple[type[Agent], str]] = {
    "tic_tac_toe/random_player.py": (Agent, "ttt-random"),
    "tic_tac_toe/minimax.py": (Agent, "ttt-minimax"),
    "tic_tac_toe/player_class.py": (PlayerAgent, "Player"),
    "connect_four/random_player.py": (FunctionAgent, "random_column"),
    "connect_four/minimax.py": (Agent, "c4-minimax"),
    "connect_four/kaggle_style.py": (KaggleAgent, "agent"),
    "quarto/random_player.py": (Agent, "quarto-random"),
    "quarto/heuristic.py": (FunctionAgent, "one_move_lookahead"),
    "rock_paper_scissors/random_player.py": (FunctionAgent, "random_throw"),
    "rock_paper_scissors/frequency.py": (Agent, "rps-frequency"),
    "sum_to_10/random_player.py": (Agent, "sum-random"),
    "sum_to_10/optimal.py": (FunctionAgent, "optimal"),
    "lowest_unique/random_player.py": (FunctionAgent, "random_number"),
    "lowest_unique/low_bidder.py": (Agent, "lowest-unique-low-bidder"),
    "openspiel/random_player.py": (Agent, "openspiel-random"),
}
#: The players of one-player games, played by evaluations rather than duels
#: (test_example_players_evaluations.py).
ONE_PLAYER_AGENTS: dict[str, tuple[type[Agent], str]] = {
    "acrobot/random_player.py": (Agent, "acrobot-random"),
    "cartpole/random_player.py": (Agent, "cartpole-random"),
    "cartpole/balancer.py": (FunctionAgent, "balance"),
    "cartpole/constant.py": (KaggleAgent, "agent"),
    "frozen_lake/random_player.py": (Agent, "frozen-lake-random"),
    "mountain_car/random_player.py": (Agent, "mountain-car-random"),
}
#: The game each folder's players are tried on: its own, but OpenSpiel's players play any
#: OpenSpiel game (leduc poker here: chance, hidden cards, short matches).
FOLDER_GAMES = {"openspiel": "openspiel:leduc_poker"}


def game_of(relative_path: str) -> str:
    folder = relative_path.split("/")[0]
    return FOLDER_GAMES.get(folder, folder)


def python_player_files() -> list[str]:
    return sorted(
        path.relative_to(EXAMPLE_PLAYERS_DIR).as_posix()
        for path in EXAMPLE_PLAYERS_DIR.glob("*/*.py")
    )


def test_it_lists_every_python_player() -> None:
    assert python_player_files() == sorted({**EXPECTED_AGENTS, **ONE_PLAYER_AGENTS})


def test_it_has_a_random_player_for_every_game() -> None:
    for name in environment_names():
        assert (EXAMPLE_PLAYERS_DIR / name / "random_player.py").is_file(), name


@pytest.mark.parametrize("relative_path", sorted(EXPECTED_AGENTS))
def test_it_loads_the_intended_agent(
    relative_path: str, load_player: Callable[[str], Agent]
) -> None:
    adapter, name = EXPECTED_AGENTS[relative_path]
    agent = load_player(relative_path)
    assert isinstance(agent, adapter)
    assert agent.describe() == name


@pytest.mark.parametrize("relative_path", sorted(EXPECTED_AGENTS))
def test_it_plays_only_legal_actions(
    relative_path: str, load_player: Callable[[str], Agent], duel_in_process: Callable
) -> None:
    environment_name = game_of(relative_path)
    transcript = duel_in_process(load_player(relative_path), environment_name, matches=4)
    assert len(transcript.outcomes) == 4
    assert transcript.moves, "the agent was never asked to act"


@pytest.mark.parametrize("relative_path", sorted(EXPECTED_AGENTS))
def test_it_replays_a_duel_identically(
    relative_path: str, load_player: Callable[[str], Agent], duel_in_process: Callable
) -> None:
    environment_name = game_of(relative_path)
    first = duel_in_process(load_player(relative_path), environment_name, matches=2, seed=7)
    second = duel_in_process(load_player(relative_path), environment_name, matches=2, seed=7)
    assert first.moves == second.moves


@pytest.mark.parametrize("relative_path", sorted(EXPECTED_AGENTS))
def test_it_runs_alone_with_only_the_sdk_importable(
    relative_path: str, tmp_path: Path, duel_subprocess: Callable
) -> None:
    # As in a sandbox: the file copied on its own, no site-packages (-S), so neither
    # the games in environments/ nor third-party packages can be imported.
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    copied = shutil.copy(EXAMPLE_PLAYERS_DIR / relative_path, sandbox / "main.py")
    environment = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SDK_DIR)}
    duel = duel_subprocess(
        [sys.executable, "-S", "-m", "arena_sdk", str(copied)],
        game_of(relative_path),
        matches=2,
        cwd=sandbox,
        env=environment,
    )
    assert duel.exit_code == 0, duel.stderr
    assert len(duel.transcript.outcomes) == 2
