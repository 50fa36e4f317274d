"""Tic-tac-toe: minimax with alpha-beta pruning (subclass style).

The default depth searches the whole game tree, so this player never loses. Set
``ARENA_MINIMAX_DEPTH`` to weaken it; a cut-off position scores as a draw.
"""

from __future__ import annotations

import os
from typing import Any

from arena_sdk import Agent, Match, Turn, run

#: Deep enough for a full search of a 3x3 board.
DEPTH = 9

WIN_SCORE = 100
INFINITY = 10_000


def search_depth() -> int:
    return int(os.environ.get("ARENA_MINIMAX_DEPTH", DEPTH))


def board_lines(rows: int, columns: int, inarow: int) -> list[tuple[int, ...]]:
    """Every run of ``inarow`` squares in a straight line, as board indices."""
    lines = []
    for row in range(rows):
        for column in range(columns):
            for row_step, column_step in ((0, 1), (1, 0), (1, 1), (1, -1)):
                last_row = row + row_step * (inarow - 1)
                last_column = column + column_step * (inarow - 1)
                if 0 <= last_row < rows and 0 <= last_column < columns:
                    lines.append(
                        tuple(
                            (row + row_step * i) * columns + column + column_step * i
                            for i in range(inarow)
                        )
                    )
    return lines


class MinimaxPlayer(Agent):
    name = "ttt-minimax"

    def __init__(self) -> None:
        self.depth = search_depth()
        self.set_geometry(3, 3, 3)

    def start(self, match: Match) -> None:
        configuration = match.configuration
        self.set_geometry(
            configuration.get("rows", 3),
            configuration.get("columns", 3),
            configuration.get("inarow", 3),
        )

    def set_geometry(self, rows: int, columns: int, inarow: int) -> None:
        lines = board_lines(rows, columns, inarow)
        squares = range(rows * columns)
        self.lines_through = [[line for line in lines if square in line] for square in squares]
        # Squares on many lines first (the center, then corners): good moves early
        # make alpha-beta cut more.
        self.move_order = sorted(squares, key=lambda square: -len(self.lines_through[square]))

    def act(self, turn: Turn) -> Any:
        board = list(turn.observation["board"])
        mark = turn.observation["mark"]
        best_score = -INFINITY
        best_moves: list[int] = []
        for move in turn.legal_actions:
            board[move] = mark
            # A window just below the best score so far keeps ties exact, letting the
            # seeded random pick among all equally good moves.
            score = -self.negamax(board, 3 - mark, move, self.depth - 1, -INFINITY, 1 - best_score)
            board[move] = 0
            if score > best_score:
                best_score, best_moves = score, [move]
            elif score == best_score:
                best_moves.append(move)
        return turn.random.choice(best_moves)

    def negamax(
        self, board: list[int], mark: int, last_move: int, depth: int, alpha: int, beta: int
    ) -> int:
        """Score of ``board`` for ``mark``, who is to move; quicker wins score higher."""
        empty = board.count(0)
        if self.completes_line(board, last_move):
            return -WIN_SCORE - empty
        if empty == 0 or depth <= 0:
            return 0
        best = -INFINITY
        for move in self.move_order:
            if board[move]:
                continue
            board[move] = mark
            score = -self.negamax(board, 3 - mark, move, depth - 1, -beta, -alpha)
            board[move] = 0
            best = max(best, score)
            alpha = max(alpha, score)
            if alpha >= beta:
                break
        return best

    def completes_line(self, board: list[int], move: int) -> bool:
        mark = board[move]
        return any(
            all(board[square] == mark for square in line) for line in self.lines_through[move]
        )


if __name__ == "__main__":
    run(MinimaxPlayer())
