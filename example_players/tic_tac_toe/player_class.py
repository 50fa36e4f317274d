"""Tic-tac-toe in the ``Player`` class style, with no import of arena_sdk.

Rules of thumb, in order: win, block, take the center, take a corner, take anything.
"""

from __future__ import annotations

LINES = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)
CENTER = 4
CORNERS = (0, 2, 6, 8)


def completing_square(board: list[int], mark: int, valid_actions: list[int]) -> int | None:
    """A free square that gives ``mark`` three in a row, if there is one."""
    for line in LINES:
        marks = [board[square] for square in line]
        if marks.count(mark) == 2 and marks.count(0) == 1:
            square = line[marks.index(0)]
            if square in valid_actions:
                return square
    return None


class Player:
    def __init__(self) -> None:
        self.matches_played = 0
        self.total_reward: float = 0

    def start(self, state: dict, valid_actions: list[int]) -> int:
        return self.choose(state, valid_actions)

    def step(self, state: dict, valid_actions: list[int], prev_reward: float) -> int:
        return self.choose(state, valid_actions)

    def end(self, state: dict | None, prev_reward: float) -> None:
        self.matches_played += 1
        self.total_reward += prev_reward

    def choose(self, state: dict, valid_actions: list[int]) -> int:
        board = state["board"]
        mark = state["mark"]
        for candidate in (
            completing_square(board, mark, valid_actions),
            completing_square(board, 3 - mark, valid_actions),
        ):
            if candidate is not None:
                return candidate
        if CENTER in valid_actions:
            return CENTER
        for corner in CORNERS:
            if corner in valid_actions:
                return corner
        return valid_actions[0]
