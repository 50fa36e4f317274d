from __future__ import annotations

import html
from typing import Any

import pytest

from environments.base import Environment
from environments.registry import (
    ENVIRONMENTS_DIR,
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    environment_names,
    load_environment_class,
    load_info,
    make_environment,
)

GAMES = ["connect_four", "quarto", "rock_paper_scissors", "sum_to_10", "tic_tac_toe"]
#: One-player games whose folder names a Gymnasium id (tests/environments/test_gymnasium_games.py).
GYMNASIUM_GAMES = ["acrobot", "cartpole", "frozen_lake", "mountain_car"]
#: Games of more than two players (set by their ``players`` setting).
N_PLAYER_GAMES = ["lowest_unique"]
#: Games with a board of their own (a stylesheet, an HTML rendering); the Gymnasium
#: ones show a text trace (tests/environments/test_gymnasium_games.py).
BOARD_GAMES = sorted(GAMES + N_PLAYER_GAMES)
ALL_GAMES = sorted(BOARD_GAMES + GYMNASIUM_GAMES)

#: Actions that end a match quickly from the start, one entry per step.
ENDINGS: dict[str, list[dict[int, Any]]] = {
    "tic_tac_toe": [{0: 0}, {1: 3}, {0: 1}, {1: 4}, {0: 2}],
    "connect_four": [{0: 0}, {1: 1}, {0: 0}, {1: 1}, {0: 0}, {1: 1}, {0: 0}],
    "quarto": [
        {0: {"square": None, "piece": 1}},
        {1: {"square": 0, "piece": 3}},
        {0: {"square": 1, "piece": 5}},
        {1: {"square": 2, "piece": 15}},
        {0: {"square": 3, "piece": 0}},
    ],
    "rock_paper_scissors": [{0: "rock", 1: "scissors"}] * 3,
    "sum_to_10": [{0: 3}, {1: 3}, {0: 3}, {1: 1}],
    "lowest_unique": [{0: 1, 1: 2, 2: 2, 3: 3}] * 5,
}


def finished(name: str) -> Environment:
    environment = make_environment(name)
    for actions in ENDINGS[name]:
        environment.step(actions)
    assert environment.is_terminal()
    return environment


def test_it_lists_every_game() -> None:
    assert environment_names() == ALL_GAMES


@pytest.mark.parametrize("name", GAMES)
def test_it_reads_each_info_file_with_the_right_types(name: str) -> None:
    info = load_info(name)

    assert info.name == name
    assert info.players == 2
    for text in (info.title, info.description, info.rules):
        assert isinstance(text, str)
        assert text.strip()
    for count in (info.matches_per_duel, info.validation_matches, info.memory_mb):
        assert isinstance(count, int)
        assert count > 0
    assert isinstance(info.cpu_seconds, int)
    for seconds in (info.move_time, info.time_bank, info.startup_time):
        assert isinstance(seconds, int | float)
        assert seconds > 0
    assert 2 <= info.validation_matches <= 4
    expected_matches = 20 if name == "rock_paper_scissors" else 10
    assert info.matches_per_duel == expected_matches


@pytest.mark.parametrize("name", GAMES)
def test_it_makes_each_game_from_its_name(name: str) -> None:
    environment = make_environment(name)

    assert isinstance(environment, load_environment_class(name))
    assert environment.name == name
    assert environment.num_players == 2
    assert environment.configuration == type(environment).default_configuration()
    environment.reset(7)
    assert environment.seed == 7
    assert environment.to_move() in ([0], [0, 1])


def test_it_raises_for_an_unknown_game() -> None:
    with pytest.raises(UnknownEnvironment, match="chess"):
        make_environment("chess")
    with pytest.raises(UnknownEnvironment):
        load_info("../environments")


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_it_ships_a_stylesheet_using_the_game_class_prefix(name: str) -> None:
    info = load_info(name)
    stylesheet = info.static_dir / f"{name}.css"

    assert stylesheet.is_file()
    assert stylesheet.parent == ENVIRONMENTS_DIR / name / "static"
    assert f".{info.html_class}-" in stylesheet.read_text()


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_it_renders_the_initial_and_final_states(name: str) -> None:
    html_class = load_info(name).html_class
    for environment in (make_environment(name), finished(name)):
        text = environment.render_text()
        fragment = environment.render_html()

        assert text.strip()
        assert fragment.startswith(f'<div class="{html_class}">')
        assert fragment.endswith("</div>")
        assert f'class="{html_class}-' in fragment
        assert "<script" not in fragment
        assert "http" not in fragment
        assert html.escape(environment.name) in environment.render_html_page()


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_it_shows_the_winner_in_the_html(name: str) -> None:
    fragment = finished(name).render_html()

    assert "wins" in fragment


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_it_escapes_text_in_the_html(name: str) -> None:
    # The game's class, chosen by the parameter: mypy sees only that it is a class.
    class Hostile(load_environment_class(name)):  # type: ignore[misc]
        def _status(self) -> str:
            return "<b>&\"'"

    fragment = Hostile().render_html()

    assert "<b>" not in fragment
    assert "&lt;b&gt;&amp;" in fragment


@pytest.mark.parametrize("name", GAMES)
def test_its_ladder_duels_are_two_matches_unless_info_says_otherwise(name: str) -> None:
    assert load_info(name).ladder_matches_per_duel == 2


@pytest.fixture
def uncached_info():
    # load_info remembers what it read: forget the edited copies on both sides.
    load_info.cache_clear()
    yield
    load_info.cache_clear()


def _game_with_info_line(tmp_path, monkeypatch, line: str) -> str:
    folder = tmp_path / "connect_four"
    folder.mkdir()
    original = (ENVIRONMENTS_DIR / "connect_four" / "info.yml").read_text()
    (folder / "info.yml").write_text(original + line + "\n")
    monkeypatch.setattr("environments.registry.ENVIRONMENTS_DIR", tmp_path)
    return "connect_four"


@pytest.mark.usefixtures("uncached_info")
def test_it_reads_the_ladder_duel_length_from_info(tmp_path, monkeypatch) -> None:
    name = _game_with_info_line(tmp_path, monkeypatch, "ladder_matches_per_duel: 4")

    assert load_info(name).ladder_matches_per_duel == 4


@pytest.mark.usefixtures("uncached_info")
@pytest.mark.parametrize("value", ["0", "two", "true", "1.5"])
def test_it_refuses_a_ladder_duel_length_that_is_not_a_positive_integer(
    tmp_path, monkeypatch, value: str
) -> None:
    name = _game_with_info_line(tmp_path, monkeypatch, f"ladder_matches_per_duel: {value}")

    with pytest.raises(InvalidEnvironmentInfo, match="ladder_matches_per_duel"):
        load_info(name)


@pytest.mark.parametrize("name", ALL_GAMES)
def test_its_info_file_seats_as_many_players_as_the_game(name: str) -> None:
    assert make_environment(name).num_players == load_info(name).players
    assert (
        make_environment(name, players=load_info(name).players).num_players
        == load_info(name).players
    )
