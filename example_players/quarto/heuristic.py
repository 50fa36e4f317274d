"""Quarto: one-move lookahead (decorator style).

Wins at once when the piece in hand completes a line; otherwise never hands over a
piece that lets the opponent win on their next placement, if a safe choice exists.
Among equally good actions it picks at random (seeded, so duels replay identically).
"""

from __future__ import annotations

from typing import Any

from arena_sdk import Turn, agent, run

SIDE = 4
ALL_ATTRIBUTES = (1 << SIDE) - 1
LINES = (
    *(tuple(row * SIDE + column for column in range(SIDE)) for row in range(SIDE)),
    *(tuple(row * SIDE + column for row in range(SIDE)) for column in range(SIDE)),
    tuple(index * SIDE + index for index in range(SIDE)),
    tuple(index * SIDE + SIDE - 1 - index for index in range(SIDE)),
)


def completes_line(board: list[int | None], square: int, piece: int) -> bool:
    """Whether ``piece`` on the empty ``square`` fills a line sharing an attribute."""
    for line in LINES:
        if square not in line:
            continue
        pieces = [piece if index == square else board[index] for index in line]
        filled = [other for other in pieces if other is not None]
        if len(filled) < len(pieces):
            continue
        shared_set = ALL_ATTRIBUTES
        shared_clear = ALL_ATTRIBUTES
        for other in filled:
            shared_set &= other
            shared_clear &= ~other
        if shared_set or shared_clear:
            return True
    return False


def gives_a_win(board: list[int | None], piece: int | None) -> bool:
    """Whether the opponent, handed ``piece``, can complete a line with it."""
    if piece is None:
        return False
    return any(
        completes_line(board, square, piece)
        for square, occupant in enumerate(board)
        if occupant is None
    )


@agent
def one_move_lookahead(turn: Turn) -> Any:
    board = list(turn.observation["board"])
    in_hand = turn.observation.get("piece")
    actions = turn.legal_actions

    if in_hand is not None:
        for action in actions:
            if completes_line(board, action["square"], in_hand):
                return action

    safe = []
    for action in actions:
        square = action["square"]
        if square is not None:
            board[square] = in_hand
        if not gives_a_win(board, action["piece"]):
            safe.append(action)
        if square is not None:
            board[square] = None
    return turn.random.choice(safe or actions)


if __name__ == "__main__":
    run(one_move_lookahead)
