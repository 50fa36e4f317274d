"""Tic-tac-toe on a row-major board of ``rows * columns`` cells (3x3 by default): a mark on
any empty cell; ``inarow`` in a line wins (``environments.k_in_a_row``).
"""

from __future__ import annotations

import html

from environments.base import JSON, IllegalAction, require_int
from environments.k_in_a_row import KInARow

SYMBOLS = ("X", "O")


class TicTacToe(KInARow):
    name = "tic_tac_toe"

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

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        return [{"cell": action} for action in actions]

    def _status(self) -> str:
        if self.winning_player is not None:
            return f"Player {self.winning_player + 1} ({SYMBOLS[self.winning_player]}) wins"
        if self.terminal:
            return "Draw"
        return f"Player {self.current + 1} ({SYMBOLS[self.current]}) to move"

    def render_text(self) -> str:
        return f"{self.board_text()}\n{self._status()}"

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

    def render_html(self) -> str:
        winning = set(self.winning_line)
        rows_html = []
        for row in range(self.rows):
            cells_html = []
            for column in range(self.columns):
                cell = row * self.columns + column
                mark = self.board[cell]
                classes = ["tic-tac-toe-cell"]
                description = f"row {row + 1}, column {column + 1}: "
                if mark:
                    classes.append(f"tic-tac-toe-player-{mark}")
                    description += f"{SYMBOLS[mark - 1]} (player {mark})"
                else:
                    description += "empty"
                if cell == self.last_action:
                    classes.append("tic-tac-toe-last")
                    description += ", last move"
                if cell in winning:
                    classes.append("tic-tac-toe-win")
                    description += ", winning line"
                symbol = SYMBOLS[mark - 1] if mark else ""
                cells_html.append(
                    f'<td class="{" ".join(classes)}" aria-label="{html.escape(description)}">'
                    f"{html.escape(symbol)}</td>"
                )
            rows_html.append(f"<tr>{''.join(cells_html)}</tr>")
        return (
            '<div class="tic-tac-toe">'
            '<table class="tic-tac-toe-board">'
            f'<caption class="tic-tac-toe-status">{html.escape(self._status())}</caption>'
            f"{''.join(rows_html)}</table></div>"
        )
