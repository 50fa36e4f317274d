"""Connect Four: negamax with alpha-beta pruning on bitboards (subclass style).

Each player's stones are one Python int with a bit per cell, column by column from
the bottom, plus an always-empty guard bit on top of every column so that shifted
lines never wrap into the next column. Finding lines is then a handful of shifts
and ANDs, which keeps a depth-4 search to a few milliseconds per move.

Leaves are scored by open threes (empty cells that would complete a line) and by
how many lines pass through each occupied cell, which favours the center.

``ARENA_MINIMAX_DEPTH`` sets the depth (4). ``ARENA_BLUNDER_RATE`` (0) makes it play a
random legal column on that share of its moves, drawn from ``turn.random`` so a duel
replays identically: agents of known, graded strength for the rating benchmark.
"""

from __future__ import annotations

import os
from typing import Any

from arena_sdk import Agent, Match, Turn, run

DEPTH = 4

WIN_SCORE = 1_000_000
INFINITY = 10 * WIN_SCORE
THREAT_SCORE = 24


def search_depth() -> int:
    return int(os.environ.get("ARENA_MINIMAX_DEPTH", DEPTH))


def blunder_rate() -> float:
    return float(os.environ.get("ARENA_BLUNDER_RATE", 0))


class Bitboard:
    """Board geometry; cell (column, height from the bottom) is bit column*(rows+1)+height."""

    def __init__(self, rows: int, columns: int, inarow: int) -> None:
        self.rows = rows
        self.columns = columns
        self.inarow = inarow
        self.stride = rows + 1
        self.cells = rows * columns
        self.bottom = sum(1 << column * self.stride for column in range(columns))
        self.full = self.bottom * ((1 << rows) - 1)
        self.column_bottoms = [1 << column * self.stride for column in range(columns)]
        self.column_tops = [1 << column * self.stride + rows - 1 for column in range(columns)]
        self.column_cells = [bottom * ((1 << rows) - 1) for bottom in self.column_bottoms]
        center = (columns - 1) / 2
        self.move_order = sorted(range(columns), key=lambda column: abs(column - center))
        # Vertical, horizontal and both diagonals.
        self.directions = (1, self.stride, self.stride + 1, self.stride - 1)
        # For a cell to complete a line it needs own stones at these offsets from it,
        # one list per direction and position of the cell within the line.
        self.completion_offsets = [
            [(other - hole) * direction for other in range(inarow) if other != hole]
            for direction in self.directions
            for hole in range(inarow)
        ]
        self.cell_weights = self._cell_weight_masks()

    def _cell_weight_masks(self) -> list[tuple[int, int]]:
        """(weight, cells) pairs; a cell's weight is the number of lines through it."""
        weights: dict[int, int] = {}
        for column in range(self.columns):
            for height in range(self.rows):
                count = 0
                for column_step, height_step in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    for start in range(self.inarow):
                        first_column = column - column_step * start
                        first_height = height - height_step * start
                        last_column = first_column + column_step * (self.inarow - 1)
                        last_height = first_height + height_step * (self.inarow - 1)
                        if all(
                            0 <= value < limit
                            for value, limit in (
                                (first_column, self.columns),
                                (last_column, self.columns),
                                (first_height, self.rows),
                                (last_height, self.rows),
                            )
                        ):
                            count += 1
                bit = 1 << column * self.stride + height
                weights[count] = weights.get(count, 0) | bit
        return sorted(weights.items())

    def from_observation(self, board: list[int], mark: int) -> tuple[int, int]:
        """(own stones, all stones) from the row-major, top-row-first observation."""
        own = occupied = 0
        for index, square in enumerate(board):
            if square:
                row, column = divmod(index, self.columns)
                bit = 1 << column * self.stride + self.rows - 1 - row
                occupied |= bit
                if square == mark:
                    own |= bit
        return own, occupied

    def completing_cells(self, stones: int, occupied: int) -> int:
        """Empty cells where one more stone would give ``stones`` a line."""
        cells = 0
        for offsets in self.completion_offsets:
            found = self.full
            for offset in offsets:
                found &= stones >> offset if offset > 0 else stones << -offset
            cells |= found
        return cells & ~occupied

    def playable(self, occupied: int) -> int:
        """The lowest empty cell of every column that is not full."""
        return (occupied + self.bottom) & self.full

    def score_cells(self, stones: int) -> int:
        return sum(weight * (stones & cells).bit_count() for weight, cells in self.cell_weights)


class MinimaxPlayer(Agent):
    name = "c4-minimax"

    def __init__(self) -> None:
        self.depth = search_depth()
        self.blunder_rate = blunder_rate()
        self.geometry = Bitboard(6, 7, 4)

    def start(self, match: Match) -> None:
        configuration = match.configuration
        self.geometry = Bitboard(
            configuration.get("rows", 6),
            configuration.get("columns", 7),
            configuration.get("inarow", 4),
        )

    def act(self, turn: Turn) -> Any:
        # No draw at all at rate 0, so the plain player's moves do not change.
        if self.blunder_rate and turn.random.random() < self.blunder_rate:
            return turn.random.choice(turn.legal_actions)
        geometry = self.geometry
        own, occupied = geometry.from_observation(
            turn.observation["board"], turn.observation["mark"]
        )
        columns = list(turn.legal_actions)
        playable = geometry.playable(occupied)
        winning = geometry.completing_cells(own, occupied) & playable
        threatened = geometry.completing_cells(own ^ occupied, occupied) & playable
        for urgent in (winning, threatened):
            for column in columns:
                if geometry.column_cells[column] & urgent:
                    return column

        best_score = -INFINITY
        best_columns: list[int] = []
        for column in sorted(columns, key=geometry.move_order.index):
            child_occupied = occupied | (occupied + geometry.column_bottoms[column])
            # A window just below the best score so far keeps ties exact, letting the
            # seeded random pick among all equally good moves.
            score = -self.negamax(
                own ^ occupied, child_occupied, self.depth - 1, -INFINITY, 1 - best_score
            )
            if score > best_score:
                best_score, best_columns = score, [column]
            elif score == best_score:
                best_columns.append(column)
        return turn.random.choice(best_columns)

    def negamax(self, stones: int, occupied: int, depth: int, alpha: int, beta: int) -> int:
        """Score for the player to move, who owns ``stones``; quicker wins score higher."""
        geometry = self.geometry
        placed = occupied.bit_count()
        if placed == geometry.cells:
            return 0
        playable = geometry.playable(occupied)
        own_wins = geometry.completing_cells(stones, occupied)
        if own_wins & playable:
            return WIN_SCORE - placed - 1
        opponent = stones ^ occupied
        opponent_wins = geometry.completing_cells(opponent, occupied)
        if depth <= 0:
            return THREAT_SCORE * (own_wins.bit_count() - opponent_wins.bit_count()) + (
                geometry.score_cells(stones) - geometry.score_cells(opponent)
            )
        forced = opponent_wins & playable
        if forced & (forced - 1):
            # Two immediate threats: only one can be blocked.
            return -(WIN_SCORE - placed - 2)
        best = -INFINITY
        for column in geometry.move_order:
            if occupied & geometry.column_tops[column]:
                continue
            move = (occupied + geometry.column_bottoms[column]) & ~occupied
            if forced and not move & forced:
                continue
            score = -self.negamax(opponent, occupied | move, depth - 1, -beta, -alpha)
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best


if __name__ == "__main__":
    run(MinimaxPlayer())
