"""Tic-tac-toe on a row-major board of ``rows * columns`` cells (3x3 by default): a mark on
any empty cell; ``inarow`` in a line wins (``environments.k_in_a_row``).
"""

from __future__ import annotations

import html

from environments.base import JSON, IllegalAction, require_int, square_name
from environments.k_in_a_row import KInARow

SYMBOLS = ("X", "O")


class TicTacToe(KInARow):
    name = "tic_tac_toe"
    sides = SYMBOLS
    draw_status = "Draw"

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"rows": 3, "columns": 3, "inarow": 3}

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        return [cell for cell, mark in enumerate(self.board) if mark == 0]

    def check_action(self, player: int, action: JSON) -> None:
        self.check_turn(player)
        cell = require_int(player, action, 0, len(self.board) - 1, "cell")
        if self.board[cell]:
            owner = self.board[cell] - 1
            raise IllegalAction(
                player, f"cell {cell} is already taken by player {owner + 1} ({SYMBOLS[owner]})"
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        cell = actions[self.current]
        assert isinstance(cell, int)  # checked by check_action
        self.place(cell, cell)

    def describe_action(self, action: JSON) -> str:
        """The cell's name (``b2``, the centre of a 3x3 grid: ``square_name``)."""
        cells = self.rows * self.columns
        if isinstance(action, int) and not isinstance(action, bool) and 0 <= action < cells:
            return square_name(action, self.columns)
        return super().describe_action(action)

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        return [{"cell": action} for action in actions]

    def board_text(self) -> str:
        # Empty cells show their number so a reader (or an LLM) can name its move.
        width = len(str(len(self.board) - 1))
        lines = []
        for row in range(self.rows):
            cells = []
            for cell in range(row * self.columns, (row + 1) * self.columns):
                mark = self.board[cell]
                cells.append((SYMBOLS[mark - 1] if mark else str(cell)).rjust(width))
            lines.append(" | ".join(cells))
        separator = "\n" + "-" * len(lines[0]) + "\n"
        return separator.join(lines)

    def symbol_of(self, mark: int) -> str:
        return SYMBOLS[mark - 1]

    def _cell_html(self, row: int, column: int, mark: int, marked: list[str], notes: str) -> str:
        player = [f"tic-tac-toe-player-{mark}"] if mark else []
        symbol = SYMBOLS[mark - 1] if mark else ""
        description = f"row {row + 1}, column {column + 1}: "
        description += f"{symbol} (player {mark})" if mark else "empty"
        return (
            f'<td class="{" ".join(["tic-tac-toe-cell", *player, *marked])}" '
            f'aria-label="{html.escape(description + notes)}">{html.escape(symbol)}</td>'
        )
