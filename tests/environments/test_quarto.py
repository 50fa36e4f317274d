from __future__ import annotations

import pytest

from environments.base import JSON
from environments.quarto.environment import Quarto
from tests.support.games import refuse

#: Pieces by square for a full board where no line shares an attribute.
DRAW_BOARD = [12, 15, 7, 8, 1, 10, 3, 6, 0, 5, 4, 14, 2, 9, 13, 11]

ROW = [4, 5, 6, 7]
COLUMN = [1, 5, 9, 13]
DIAGONAL = [0, 5, 10, 15]
ANTI_DIAGONAL = [3, 6, 9, 12]


def place(placements: list[tuple[int, int]], environment: Quarto | None = None) -> Quarto:
    """A match from the start where ``placements`` are (square, piece) in order.

    Each action hands over the piece of the next placement; the last one hands over
    the lowest piece left, or nothing when none is left.
    """
    environment = environment or Quarto()
    environment.step({0: {"square": None, "piece": placements[0][1]}})
    next_piece: int | None
    for index, (square, _piece) in enumerate(placements):
        if index + 1 < len(placements):
            next_piece = placements[index + 1][1]
        else:
            available = environment.observation(0)["available"]
            next_piece = available[0] if available else None
        (player,) = environment.to_move()
        environment.step({player: {"square": square, "piece": next_piece}})
    return environment


def line_pieces(bit: int, bit_set: bool) -> list[int]:
    """Four pieces sharing exactly one attribute: ``bit``, set or clear in all of them."""
    other_bits = [bit_index for bit_index in range(4) if bit_index != bit]
    # Over the three other bits these patterns leave every bit both set and clear.
    patterns = [(0, 0, 0), (1, 1, 1), (0, 1, 1), (1, 0, 0)]
    pieces = []
    for pattern in patterns:
        piece = (1 << bit) if bit_set else 0
        for other_bit, value in zip(other_bits, pattern, strict=True):
            piece |= value << other_bit
        pieces.append(piece)
    return pieces


def second_placement() -> Quarto:
    """Piece 1 on square 0, and player 0 to place piece 3."""
    environment = Quarto()
    environment.step({0: {"square": None, "piece": 1}})
    environment.step({1: {"square": 0, "piece": 3}})
    return environment


def test_it_starts_with_player_0_choosing_a_piece_without_placing() -> None:
    environment = Quarto()

    assert environment.to_move() == [0]
    assert environment.legal_actions(0) == [{"square": None, "piece": p} for p in range(16)]
    assert environment.legal_actions(1) == []
    assert environment.observation(0) == {
        "board": [None] * 16,
        "piece": None,
        "available": list(range(16)),
        "mark": 1,
    }
    assert environment.observation(1)["mark"] == 2
    assert environment.scores() == [0.0, 0.0]


def test_it_hands_the_chosen_piece_to_the_opponent() -> None:
    environment = Quarto()
    environment.step({0: {"square": None, "piece": 5}})

    assert environment.to_move() == [1]
    assert environment.observation(1)["piece"] == 5
    assert environment.observation(1)["available"] == [p for p in range(16) if p != 5]
    legal = environment.legal_actions(1)
    assert len(legal) == 16 * 15
    assert legal[0] == {"square": 0, "piece": 0}
    assert legal[15] == {"square": 1, "piece": 0}
    assert legal[-1] == {"square": 15, "piece": 15}
    assert {"square": 0, "piece": 5} not in legal

    environment.step({1: {"square": 10, "piece": 0}})

    state = environment.state()
    assert state["board"][10] == 5
    assert state["piece"] == 0
    assert state["available"] == [p for p in range(1, 16) if p != 5]
    assert state["last_action"] == {"square": 10, "piece": 0}
    assert state["to_move"] == [0]


@pytest.mark.parametrize("bit", [0, 1, 2, 3])
@pytest.mark.parametrize("bit_set", [True, False])
def test_it_wins_on_each_attribute_shared_by_a_line(bit: int, bit_set: bool) -> None:
    names = [("tall", "short"), ("dark", "light"), ("square", "round"), ("hollow", "solid")]

    environment = place(list(zip(ROW, line_pieces(bit, bit_set), strict=True)))

    assert environment.is_terminal()
    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winner"] == 0
    assert environment.state()["winning_line"] == ROW
    assert environment.state()["winning_attributes"] == [names[bit][0 if bit_set else 1]]


@pytest.mark.parametrize("line", [ROW, COLUMN, DIAGONAL, ANTI_DIAGONAL])
def test_it_wins_on_rows_columns_and_both_diagonals(line: list[int]) -> None:
    environment = place(list(zip(line, [1, 3, 5, 15], strict=True)))

    assert environment.scores() == [1.0, 0.0]
    assert environment.state()["winning_line"] == line
    assert environment.state()["winning_attributes"] == ["tall"]


def test_it_lets_the_first_player_win_and_ignores_the_piece_chosen_with_a_win() -> None:
    environment = place([(0, 8), (4, 15), (5, 13), (6, 11), (7, 1)])

    state = environment.state()
    assert state["winner"] == 1
    assert environment.scores() == [0.0, 1.0]
    assert state["winning_line"] == ROW
    assert state["winning_attributes"] == ["tall"]
    assert state["last_action"] == {"square": 7, "piece": 0}
    assert state["piece"] is None
    assert 0 in state["available"]


def test_it_does_not_count_a_full_line_sharing_no_attribute() -> None:
    environment = place(list(zip(ROW, [0, 15, 3, 12], strict=True)))

    assert not environment.is_terminal()
    assert environment.state()["winning_line"] == []
    assert environment.scores() == [0.0, 0.0]


def test_it_is_a_draw_when_the_board_fills_without_a_shared_line() -> None:
    placements = [(square, piece) for square, piece in enumerate(DRAW_BOARD)]
    environment = place(placements[:-1])
    assert environment.legal_actions(0) == [{"square": 15, "piece": None}]
    assert environment.observation(0)["available"] == []

    environment.step({0: {"square": 15, "piece": None}})

    assert environment.is_terminal()
    assert environment.scores() == [0.5, 0.5]
    assert environment.state()["winner"] is None
    assert environment.state()["board"] == DRAW_BOARD


def test_it_refuses_a_square_on_the_first_move() -> None:
    reason = refuse(Quarto(), 0, {"square": 0, "piece": 3})

    assert "square must be null on the first move" in reason


@pytest.mark.parametrize("action", ["0,3", 3, None, [0, 3], True])
def test_it_refuses_an_action_that_is_not_an_object(action: JSON) -> None:
    reason = refuse(second_placement(), 0, action)

    assert "action must be an object" in reason
    assert type(action).__name__ in reason


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        ({"square": 1}, "missing 'piece'"),
        ({"piece": 2}, "missing 'square'"),
        ({}, "missing 'square', missing 'piece'"),
        ({"square": 1, "piece": 2, "say": "hi"}, "unexpected 'say'"),
        ({"Square": 1, "piece": 2}, "missing 'square', unexpected 'Square'"),
    ],
)
def test_it_refuses_missing_or_extra_keys(action: JSON, problem: str) -> None:
    reason = refuse(second_placement(), 0, action)

    assert "exactly the keys 'square' and 'piece'" in reason
    assert problem in reason


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ({"square": "1", "piece": 2}, "square must be an integer, got str"),
        ({"square": 1.0, "piece": 2}, "square must be an integer, got float"),
        ({"square": True, "piece": 2}, "square must be an integer, got bool"),
        ({"square": [1], "piece": 2}, "square must be an integer, got list"),
        ({"square": 1, "piece": "2"}, "piece must be an integer, got str"),
        ({"square": 1, "piece": 2.0}, "piece must be an integer, got float"),
        ({"square": 1, "piece": False}, "piece must be an integer, got bool"),
        ({"square": 16, "piece": 2}, "square 16 is out of range 0..15"),
        ({"square": -1, "piece": 2}, "square -1 is out of range 0..15"),
        ({"square": 1, "piece": 16}, "piece 16 is out of range 0..15"),
        ({"square": 1, "piece": -2}, "piece -2 is out of range 0..15"),
        ({"square": None, "piece": 2}, "square is null but you must place piece 3"),
        ({"square": 1, "piece": None}, "piece is null but you must choose"),
        ({"square": 0, "piece": 2}, "square 0 is already occupied by piece 1"),
        ({"square": 1, "piece": 1}, "piece 1 is already on the board (square 0)"),
        ({"square": 1, "piece": 3}, "piece 3 is the one you are placing"),
    ],
)
def test_it_refuses_bad_squares_and_pieces(action: JSON, expected: str) -> None:
    assert expected in refuse(second_placement(), 0, action)


def test_it_says_a_used_piece_is_not_available() -> None:
    environment = second_placement()

    assert "not available" in refuse(environment, 0, {"square": 1, "piece": 1})
    assert "not available" in refuse(environment, 0, {"square": 1, "piece": 3})


def test_it_refuses_a_piece_when_none_remain_to_give() -> None:
    environment = place([(square, piece) for square, piece in enumerate(DRAW_BOARD[:-1])])

    reason = refuse(environment, 0, {"square": 15, "piece": 11})

    assert "piece must be null: no pieces remain to give" in reason


def test_it_refuses_a_player_acting_out_of_turn() -> None:
    assert refuse(Quarto(), 1, {"square": None, "piece": 0}) == "it is not this player's turn"
    assert refuse(second_placement(), 1, {"square": 1, "piece": 2}) == (
        "it is not this player's turn"
    )


def test_it_refuses_any_action_after_the_end() -> None:
    environment = place(list(zip(ROW, [1, 3, 5, 15], strict=True)))

    assert refuse(environment, 1, {"square": 0, "piece": 0}) == "the match is already over"
    assert refuse(environment, 0, {"square": 0, "piece": 0}) == "the match is already over"
    assert environment.legal_actions(0) == environment.legal_actions(1) == []


def test_it_refuses_a_board_other_than_four_by_four() -> None:
    with pytest.raises(ValueError, match="4x4"):
        Quarto({"rows": 5, "columns": 5})


def test_it_renders_pieces_with_their_attributes() -> None:
    environment = place(list(zip(ROW, [1, 3, 5, 15], strict=True)))

    text = environment.render_text()
    assert " 1  3  5 15" in text
    assert "Player 1 wins with a line of tall pieces" in text
    fragment = environment.render_html()
    assert fragment.startswith('<div class="quarto">')
    assert fragment.count("quarto-win") == 4
    assert fragment.count("quarto-last") == 1
    assert "quarto-piece quarto-tall quarto-dark quarto-round quarto-solid" in fragment
    assert "piece 3 (tall, dark, round, solid)" in fragment
