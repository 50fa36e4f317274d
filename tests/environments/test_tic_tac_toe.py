from __future__ import annotations

import pytest

from environments.base import JSON
from environments.tic_tac_toe.environment import TicTacToe
from tests.support.games import refuse


def play(cells: list[int], environment: TicTacToe | None = None) -> TicTacToe:
    """A match where the players alternately take ``cells``, player 0 first."""
    environment = environment or TicTacToe()
    for cell in cells:
        (player,) = environment.to_move()
        environment.step({player: cell})
    return environment


def test_it_starts_empty_with_player_0_to_move() -> None:
    environment = TicTacToe()

    assert environment.to_move() == [0]
    assert environment.legal_actions(0) == list(range(9))
    assert environment.legal_actions(1) == []
    assert environment.observation(0) == {"board": [0] * 9, "mark": 1}
    assert environment.observation(1) == {"board": [0] * 9, "mark": 2}
    assert environment.scores() == [0.0, 0.0]
    assert environment.state() == {
        "board": [0] * 9,
        "rows": 3,
        "columns": 3,
        "to_move": [0],
        "winner": None,
        "terminal": False,
        "last_action": None,
        "winning_line": [],
    }


def test_it_alternates_players_and_lists_empty_cells_in_order() -> None:
    environment = play([4, 0])

    assert environment.to_move() == [0]
    assert environment.observation(1)["board"] == [2, 0, 0, 0, 1, 0, 0, 0, 0]
    assert environment.legal_actions(0) == [1, 2, 3, 5, 6, 7, 8]
    assert environment.legal_actions(1) == []
    assert environment.state()["last_action"] == 0


LINES = [
    [0, 1, 2],
    [3, 4, 5],
    [6, 7, 8],
    [0, 3, 6],
    [1, 4, 7],
    [2, 5, 8],
    [0, 4, 8],
    [2, 4, 6],
]


@pytest.mark.parametrize("line", LINES)
def test_it_lets_player_0_win_on_every_line(line: list[int]) -> None:
    others = [cell for cell in range(9) if cell not in line]
    environment = play([line[0], others[0], line[1], others[1], line[2]])

    assert environment.is_terminal()
    assert environment.to_move() == []
    assert environment.scores() == [1.0, 0.0]
    assert environment.winner() == 0
    assert environment.state()["winner"] == 0
    assert environment.state()["winning_line"] == line
    assert environment.legal_actions(0) == environment.legal_actions(1) == []


def test_it_lets_the_first_player_win() -> None:
    environment = play([0, 2, 1, 4, 8, 6])

    assert environment.scores() == [0.0, 1.0]
    assert environment.state()["winner"] == 1
    assert environment.state()["winning_line"] == [2, 4, 6]


def test_it_detects_a_line_completed_in_the_middle() -> None:
    environment = play([3, 0, 5, 1, 4])

    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winning_line"] == [3, 4, 5]


def test_it_is_a_draw_when_the_board_fills_without_a_line() -> None:
    environment = play([0, 1, 2, 4, 7, 5, 3, 6, 8])

    assert environment.is_terminal()
    assert environment.scores() == [0.5, 0.5]
    assert environment.winner() is None
    assert environment.state()["winner"] is None
    assert environment.state()["winning_line"] == []
    assert environment.state()["board"] == [1, 2, 1, 1, 2, 2, 2, 1, 1]


@pytest.mark.parametrize("cell", [9, 100])
def test_it_refuses_a_cell_out_of_range(cell: int) -> None:
    reason = refuse(TicTacToe(), 0, cell)

    assert f"cell {cell} is out of range 0..8" in reason


def test_it_refuses_a_negative_cell() -> None:
    assert "cell -1 is out of range 0..8" in refuse(TicTacToe(), 0, -1)


@pytest.mark.parametrize(
    ("action", "type_name"),
    [("4", "str"), (4.0, "float"), (True, "bool"), (None, "NoneType"), ([4], "list")],
)
def test_it_refuses_an_action_that_is_not_an_integer(action: JSON, type_name: str) -> None:
    reason = refuse(TicTacToe(), 0, action)

    assert "cell must be an integer" in reason
    assert type_name in reason


def test_it_refuses_an_occupied_cell() -> None:
    environment = play([4])

    assert refuse(environment, 1, 4) == "cell 4 is already taken by player 1 (X)"


def test_it_refuses_a_player_acting_out_of_turn() -> None:
    environment = TicTacToe()

    assert refuse(environment, 1, 0) == "it is not this player's turn"
    assert refuse(play([0]), 0, 1) == "it is not this player's turn"


def test_it_refuses_any_action_after_the_end() -> None:
    environment = play([0, 3, 1, 4, 2])

    assert refuse(environment, 1, 5) == "the match is already over"
    assert refuse(environment, 0, 5) == "the match is already over"


def test_it_honours_a_larger_configuration() -> None:
    environment = TicTacToe({"rows": 4, "columns": 4, "inarow": 4})

    assert environment.legal_actions(0) == list(range(16))
    play([0, 4, 1, 5, 2, 6], environment)
    assert not environment.is_terminal()
    play([3], environment)
    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winning_line"] == [0, 1, 2, 3]


def test_it_renders_text_with_cell_numbers_and_the_status() -> None:
    text = play([4, 0]).render_text()

    assert text.splitlines()[0] == "O | 1 | 2"
    assert text.splitlines()[2] == "3 | X | 5"
    assert "Player 1 (X) to move" in text
    assert "Player 1 (X) wins" in play([0, 3, 1, 4, 2]).render_text()


def test_it_renders_html_with_the_last_move_and_winning_line() -> None:
    fragment = play([0, 3, 1, 4, 2]).render_html()

    assert fragment.startswith('<div class="tic-tac-toe">')
    assert fragment.count("tic-tac-toe-win") == 3
    assert fragment.count("tic-tac-toe-last") == 1
    assert "Player 1 (X) wins" in fragment
    assert "<script" not in fragment
