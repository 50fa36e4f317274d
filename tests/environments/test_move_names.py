"""Moves named for people (``Environment.describe_action``): what the replay's move list,
the match page and the play page's buttons show for each built-in game."""

from __future__ import annotations

import pyspiel
import pytest

from environments.base import square_name
from environments.registry import make_environment


def names_of_legal_moves(game: str, seed: int = 0) -> list[str]:
    environment = make_environment(game)
    environment.reset(seed)
    [player, *_others] = environment.to_move()
    return [environment.describe_action(action) for action in environment.legal_actions(player)]


def test_squares_are_named_by_column_letter_then_row_from_the_top() -> None:
    assert [square_name(square, 4) for square in (0, 3, 6, 12, 15)] == [
        "a1",
        "d1",
        "c2",
        "a4",
        "d4",
    ]
    assert square_name(4, 3) == "b2"
    assert square_name(29, 30) == "row 1, column 30"  # past z: in words


def test_a_quarto_move_names_its_square_and_the_piece_it_gives() -> None:
    quarto = make_environment("quarto")

    assert quarto.describe_action({"square": 6, "piece": 1}) == "c2, gives piece 1"
    assert quarto.describe_action({"square": None, "piece": 5}) == "gives piece 5"
    assert quarto.describe_action({"square": 15, "piece": None}) == "d4"
    assert names_of_legal_moves("quarto")[:2] == ["gives piece 0", "gives piece 1"]


def test_a_quarto_move_that_means_nothing_is_shown_as_sent() -> None:
    quarto = make_environment("quarto")

    assert quarto.describe_action({"square": 16, "piece": 1}) == '{"square": 16, "piece": 1}'
    assert quarto.describe_action({"square": None, "piece": None}) == (
        '{"square": null, "piece": null}'
    )
    assert quarto.describe_action(7) == "7"


def test_quartos_board_labels_its_empty_squares_as_the_moves_name_them() -> None:
    quarto = make_environment("quarto")
    quarto.reset(0)

    board = quarto.render_html()
    assert '<span class="quarto-empty">a1</span>' in board
    assert '<span class="quarto-empty">c2</span>' in board
    assert "square 6" not in board


def test_a_tic_tac_toe_move_names_its_cell() -> None:
    assert names_of_legal_moves("tic_tac_toe") == [
        "a1",
        "b1",
        "c1",
        "a2",
        "b2",
        "c2",
        "a3",
        "b3",
        "c3",
    ]


def test_a_connect_four_move_names_its_column_as_the_board_numbers_it() -> None:
    assert names_of_legal_moves("connect_four") == [f"column {column}" for column in range(7)]


def test_a_sum_to_10_move_says_what_it_adds() -> None:
    assert names_of_legal_moves("sum_to_10") == ["add 1", "add 2", "add 3"]


def test_rock_paper_scissors_and_lowest_unique_moves_are_their_own_names() -> None:
    assert names_of_legal_moves("rock_paper_scissors") == ["rock", "paper", "scissors"]
    assert names_of_legal_moves("lowest_unique") == ["1", "2", "3", "4", "5"]


@pytest.mark.parametrize(
    ("game", "names"),
    [
        ("cartpole", ["push left", "push right"]),
        ("acrobot", ["torque -1", "no torque", "torque +1"]),
        ("mountain_car", ["accelerate left", "no acceleration", "accelerate right"]),
        ("frozen_lake", ["left", "down", "right", "up"]),
    ],
)
def test_a_control_task_move_says_what_it_does(game: str, names: list[str]) -> None:
    assert names_of_legal_moves(game) == names
    assert make_environment(game).describe_action(9) == "9"  # no such action: its number


def test_a_chess_move_is_in_standard_algebraic_notation() -> None:
    chess = make_environment("openspiel:chess")
    chess.reset(0)
    white = chess.to_move()[0]

    names = [chess.describe_action(action) for action in chess.legal_actions(white)]
    assert {"e4", "Nf3", "a3"} <= set(names)
    # A promotion with check, from a position of OpenSpiel's own.
    state = pyspiel.load_game("chess").new_initial_state("k7/4P3/8/8/8/8/8/7K w - - 0 1")
    promotions = [
        chess.describe_action({"id": action, "text": state.action_to_string(action)})
        for action in state.legal_actions()
    ]
    assert "e8=Q+" in promotions and "e8=N" in promotions


def test_poker_actions_are_named() -> None:
    assert names_of_legal_moves("openspiel:leduc_poker") == ["Call", "Raise"]
    assert names_of_legal_moves("openspiel:kuhn_poker") == ["Pass", "Bet"]
    leduc = make_environment("openspiel:leduc_poker")
    leduc.reset(0)
    [first] = leduc.to_move()
    leduc.step({first: leduc.legal_actions(first)[1]})  # a raise: the other may fold
    [second] = leduc.to_move()
    names = [leduc.describe_action(action) for action in leduc.legal_actions(second)]
    assert names == ["Fold", "Call", "Raise"]


def test_a_backgammon_move_drops_openspiels_action_number() -> None:
    backgammon = make_environment("openspiel:backgammon")
    backgammon.reset(0)
    [player] = backgammon.to_move()
    legal = backgammon.legal_actions(player)

    for action in legal:
        number, moves = action["text"].split(" - ", 1)
        assert number == str(action["id"])
        assert backgammon.describe_action(action) == moves
