"""Connect Four: minimax at ARENA_MINIMAX_DEPTH that blunders on purpose.

On each move, with probability ARENA_BLUNDER_RATE (default 0), it plays a random
legal column instead of searching; the draw comes from ``turn.random``, so a duel
replays identically. At rate 0 it plays as ``example_players/connect_four/minimax.py``:
the same negamax with alpha-beta on bitboards, written compactly.
"""

from __future__ import annotations

import os
from typing import Any

from arena_sdk import Agent, Match, Turn, run

WIN = 1_000_000
INF = 10 * WIN
THREAT = 24


class BlunderingMinimax(Agent):
    name = "c4-blundering-minimax"

    def __init__(self) -> None:
        self.depth = int(os.environ.get("ARENA_MINIMAX_DEPTH", 4))
        self.rate = float(os.environ.get("ARENA_BLUNDER_RATE", 0))
        self.setup(6, 7, 4)

    def start(self, match: Match) -> None:
        config = match.configuration
        self.setup(config.get("rows", 6), config.get("columns", 7), config.get("inarow", 4))

    def setup(self, rows: int, columns: int, inarow: int) -> None:
        # Bit column * (rows + 1) + height; the extra bit per column stays empty.
        self.rows, self.columns, self.stride = rows, columns, rows + 1
        self.cells = rows * columns
        self.bottoms = [1 << c * self.stride for c in range(columns)]
        self.tops = [b << rows - 1 for b in self.bottoms]
        self.column_cells = [b * ((1 << rows) - 1) for b in self.bottoms]
        self.bottom = sum(self.bottoms)
        self.full = self.bottom * ((1 << rows) - 1)
        self.order = sorted(range(columns), key=lambda c: abs(c - (columns - 1) / 2))
        steps = (1, self.stride, self.stride + 1, self.stride - 1)
        self.offsets = [
            [(k - hole) * step for k in range(inarow) if k != hole]
            for step in steps
            for hole in range(inarow)
        ]
        weights: dict[int, int] = {}
        for c in range(columns):
            for h in range(rows):
                lines = sum(
                    all(
                        0 <= c + dc * (k - s) < columns and 0 <= h + dh * (k - s) < rows
                        for k in range(inarow)
                    )
                    for dc, dh in ((0, 1), (1, 0), (1, 1), (1, -1))
                    for s in range(inarow)
                )
                weights[lines] = weights.get(lines, 0) | 1 << c * self.stride + h
        self.weights = sorted(weights.items())

    def completing(self, stones: int, occupied: int) -> int:
        cells = 0
        for offsets in self.offsets:
            found = self.full
            for o in offsets:
                found &= stones >> o if o > 0 else stones << -o
            cells |= found
        return cells & ~occupied

    def value(self, stones: int) -> int:
        return sum(w * (stones & cells).bit_count() for w, cells in self.weights)

    def act(self, turn: Turn) -> Any:
        legal = list(turn.legal_actions)
        if self.rate > 0 and turn.random.random() < self.rate:
            return turn.random.choice(legal)
        own = occupied = 0
        for index, square in enumerate(turn.observation["board"]):
            if square:
                row, c = divmod(index, self.columns)
                bit = 1 << c * self.stride + self.rows - 1 - row
                occupied |= bit
                if square == turn.observation["mark"]:
                    own |= bit
        playable = (occupied + self.bottom) & self.full
        for urgent in (self.completing(own, occupied), self.completing(own ^ occupied, occupied)):
            for c in legal:
                if self.column_cells[c] & urgent & playable:
                    return c
        best, chosen = -INF, []
        for c in sorted(legal, key=self.order.index):
            child = occupied | (occupied + self.bottoms[c])
            score = -self.negamax(own ^ occupied, child, self.depth - 1, -INF, 1 - best)
            if score > best:
                best, chosen = score, [c]
            elif score == best:
                chosen.append(c)
        return turn.random.choice(chosen)

    def negamax(self, stones: int, occupied: int, depth: int, alpha: int, beta: int) -> int:
        placed = occupied.bit_count()
        if placed == self.cells:
            return 0
        playable = (occupied + self.bottom) & self.full
        own_wins = self.completing(stones, occupied)
        if own_wins & playable:
            return WIN - placed - 1
        opponent = stones ^ occupied
        their_wins = self.completing(opponent, occupied)
        if depth <= 0:
            threats = own_wins.bit_count() - their_wins.bit_count()
            return THREAT * threats + self.value(stones) - self.value(opponent)
        forced = their_wins & playable
        if forced & (forced - 1):
            return -(WIN - placed - 2)
        best = -INF
        for c in self.order:
            if occupied & self.tops[c]:
                continue
            move = (occupied + self.bottoms[c]) & ~occupied
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
    run(BlunderingMinimax())
