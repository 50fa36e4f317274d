from __future__ import annotations

import random

import pytest

from environments.base import JSON
from environments.connect_four.environment import ConnectFour
from tests.support.games import refuse

#: A full board with no four in a row, found by random play.
DRAW = [3, 6, 1, 3, 1, 3, 6, 4, 5, 5, 3, 4, 3, 1, 1, 0, 4, 3, 0, 4, 6]
DRAW += [6, 2, 6, 1, 0, 5, 5, 2, 4, 5, 1, 5, 6, 0, 0, 2, 2, 4, 2, 2, 0]


def cell(row: int, column: int) -> int:
    return row * 7 + column


def play(columns: list[int], environment: ConnectFour | None = None) -> ConnectFour:
    """A match where the players alternately drop into ``columns``, player 0 first."""
    environment = environment or ConnectFour()
    for column in columns:
        (player,) = environment.to_move()
        environment.step({player: column})
    return environment


def test_it_starts_empty_with_every_column_open() -> None:
    environment = ConnectFour()

    assert environment.to_move() == [0]
    assert environment.legal_actions(0) == list(range(7))
    assert environment.legal_actions(1) == []
    assert environment.observation(0) == {"board": [0] * 42, "mark": 1}
    assert environment.observation(1) == {"board": [0] * 42, "mark": 2}
    assert environment.scores() == [0.0, 0.0]
    assert environment.state()["to_move"] == [0]
    assert environment.state()["last_action"] is None


def test_it_drops_discs_to_the_lowest_empty_row_with_the_top_row_first() -> None:
    environment = play([3, 3, 0])

    board = environment.observation(1)["board"]
    assert board[cell(5, 3)] == 1
    assert board[cell(4, 3)] == 2
    assert board[cell(5, 0)] == 1
    assert sum(1 for mark in board if mark) == 3
    assert environment.state()["last_action"] == 0
    assert environment.state()["last_cell"] == cell(5, 0)
    assert environment.to_move() == [1]
    assert environment.legal_actions(1) == list(range(7))
    assert environment.legal_actions(0) == []


WINS = [
    pytest.param([0, 0, 1, 1, 2, 2, 3], 0, [cell(5, c) for c in (0, 1, 2, 3)], id="row-left"),
    pytest.param([3, 3, 4, 4, 5, 5, 6], 0, [cell(5, c) for c in (3, 4, 5, 6)], id="row-right"),
    pytest.param(
        [0, 0, 1, 1, 3, 3, 2], 0, [cell(5, c) for c in (0, 1, 2, 3)], id="row-middle-completion"
    ),
    pytest.param(
        [0, 1, 2, 3, 6, 0, 6, 1, 5, 2, 5, 3],
        1,
        [cell(4, c) for c in (0, 1, 2, 3)],
        id="row-second-from-bottom",
    ),
    pytest.param(
        [0, 0, 1, 1, 3, 3, 4, 4, 2],
        0,
        [cell(5, c) for c in (0, 1, 2, 3, 4)],
        id="row-of-five-completed-in-the-middle",
    ),
    pytest.param([0, 1, 0, 1, 0, 1, 0], 0, [cell(r, 0) for r in (2, 3, 4, 5)], id="column-left"),
    pytest.param(
        [0, 6, 0, 6, 1, 6, 1, 6], 1, [cell(r, 6) for r in (2, 3, 4, 5)], id="column-right"
    ),
    pytest.param(
        [0, 3, 3, 0, 3, 0, 3, 1, 3], 0, [cell(r, 3) for r in (1, 2, 3, 4)], id="column-raised"
    ),
    pytest.param(
        [0, 1, 1, 2, 3, 2, 2, 3, 6, 3, 3],
        0,
        [cell(5, 0), cell(4, 1), cell(3, 2), cell(2, 3)],
        id="rising-diagonal",
    ),
    pytest.param(
        [6, 5, 5, 4, 3, 4, 4, 3, 0, 3, 3],
        0,
        [cell(2, 3), cell(3, 4), cell(4, 5), cell(5, 6)],
        id="falling-diagonal",
    ),
    pytest.param(
        [0, 1, 6, 2, 5, 2, 2, 3, 4, 3, 6, 3, 3, 6, 1],
        0,
        [cell(5, 0), cell(4, 1), cell(3, 2), cell(2, 3)],
        id="rising-diagonal-middle-completion",
    ),
]


@pytest.mark.parametrize(("columns", "winner", "line"), WINS)
def test_it_detects_four_in_a_row_in_every_direction(
    columns: list[int], winner: int, line: list[int]
) -> None:
    environment = play(columns[:-1])
    assert not environment.is_terminal()

    play(columns[-1:], environment)

    assert environment.is_terminal()
    assert environment.to_move() == []
    assert environment.state()["winner"] == winner
    assert environment.winner() == winner
    assert environment.scores() == [1.0 if player == winner else 0.0 for player in (0, 1)]
    assert environment.state()["winning_line"] == sorted(line)
    assert environment.legal_actions(0) == environment.legal_actions(1) == []


def test_it_is_a_draw_when_the_board_fills_without_four_in_a_row() -> None:
    environment = play(DRAW[:-1])
    assert not environment.is_terminal()
    assert environment.legal_actions(1) == [0]

    play(DRAW[-1:], environment)

    assert environment.is_terminal()
    assert environment.scores() == [0.5, 0.5]
    assert environment.winner() is None
    assert environment.state()["winner"] is None
    assert environment.state()["winning_line"] == []
    assert 0 not in environment.state()["board"]


def test_it_refuses_a_full_column_and_stops_listing_it() -> None:
    environment = play([0] * 6)

    assert environment.legal_actions(0) == [1, 2, 3, 4, 5, 6]
    assert refuse(environment, 0, 0) == "column 0 is full"


@pytest.mark.parametrize("column", [7, 42])
def test_it_refuses_a_column_out_of_range(column: int) -> None:
    assert f"column {column} is out of range 0..6" in refuse(ConnectFour(), 0, column)


def test_it_refuses_a_negative_column() -> None:
    assert "column -1 is out of range 0..6" in refuse(ConnectFour(), 0, -1)


@pytest.mark.parametrize(
    ("action", "type_name"),
    [("3", "str"), (3.0, "float"), (False, "bool"), (None, "NoneType"), ([3], "list")],
)
def test_it_refuses_an_action_that_is_not_an_integer(action: JSON, type_name: str) -> None:
    reason = refuse(ConnectFour(), 0, action)

    assert "column must be an integer" in reason
    assert type_name in reason


def test_it_refuses_a_player_acting_out_of_turn() -> None:
    assert refuse(ConnectFour(), 1, 3) == "it is not this player's turn"
    assert refuse(play([3]), 0, 3) == "it is not this player's turn"


def test_it_refuses_any_action_after_the_end() -> None:
    environment = play([0, 1, 0, 1, 0, 1, 0])

    assert refuse(environment, 1, 1) == "the match is already over"
    assert refuse(environment, 0, 2) == "the match is already over"


def test_it_honours_another_board_size() -> None:
    environment = ConnectFour({"rows": 4, "columns": 5, "inarow": 3})

    assert environment.legal_actions(0) == list(range(5))
    play([0, 0, 1, 1, 2], environment)
    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winning_line"] == [15, 16, 17]


def test_it_renders_text_from_the_top_row_down() -> None:
    text = play([3, 3]).render_text()

    lines = text.splitlines()
    assert lines[0] == "0 1 2 3 4 5 6"
    assert lines[5] == ". . . O . . ."
    assert lines[6] == ". . . X . . ."
    assert "Player 1 (red) to move" in text


def test_it_renders_html_with_the_last_move_and_winning_line() -> None:
    fragment = play([0, 0, 1, 1, 2, 2, 3]).render_html()

    assert fragment.startswith('<div class="connect-four">')
    assert fragment.count('class="connect-four-cell') == 42
    assert fragment.count("connect-four-win") == 4
    assert fragment.count("connect-four-last") == 1
    assert "Player 1 (red) wins" in fragment


def brute_force_winner(board: list[int], rows: int, columns: int, inarow: int) -> int | None:
    """The player with ``inarow`` marks in a line anywhere, by looking at every cell."""
    for row in range(rows):
        for column in range(columns):
            mark = board[row * columns + column]
            if not mark:
                continue
            for row_step, column_step in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(row + i * row_step, column + i * column_step) for i in range(inarow)]
                if all(
                    0 <= r < rows and 0 <= c < columns and board[r * columns + c] == mark
                    for r, c in cells
                ):
                    return mark - 1
    return None


@pytest.mark.parametrize(
    ("rows", "columns", "inarow"),
    [(6, 7, 4), (4, 4, 3), (5, 9, 5), (7, 3, 4), (1, 8, 3), (8, 1, 4), (3, 3, 5), (2, 2, 1)],
)
def test_it_ends_a_match_exactly_when_a_line_appears_on_any_board(
    rows: int, columns: int, inarow: int
) -> None:
    # The win check works on bits; a scan of every cell after each move must agree with it,
    # and every open column must stay listed until it is full.
    rng = random.Random(rows * 100 + columns * 10 + inarow)
    for _ in range(300):
        environment = ConnectFour({"rows": rows, "columns": columns, "inarow": inarow})
        while not environment.is_terminal():
            (player,) = environment.to_move()
            open_columns = [c for c in range(columns) if environment.board[c] == 0]
            assert environment.legal_actions(player) == open_columns
            environment.step({player: rng.choice(open_columns)})
            winner = brute_force_winner(environment.board, rows, columns, inarow)
            assert environment.winner() == winner
            full = all(environment.board)
            assert environment.is_terminal() == (winner is not None or full)
        winner = environment.winner()
        if winner is not None:
            line = environment.state()["winning_line"]
            assert len(line) >= inarow
            assert all(environment.board[c] == winner + 1 for c in line)
