"""Tic-tac-toe on a row-major board of ``rows * columns`` cells (3x3 by default).

Cells hold 0 when empty and ``player + 1`` otherwise, the same board and
observation that kaggle-environments uses, so kaggle agents play unchanged.
"""

from __future__ import annotations

import html

from environments.base import JSON, Environment, IllegalAction, require_int

SYMBOLS = ("X", "O")
# (row step, column step): horizontal, vertical, diagonal, anti-diagonal.
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


class TicTacToe(Environment):
    name = "tic_tac_toe"

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        self.rows = self.positive_int_setting("rows")
        self.columns = self.positive_int_setting("columns")
        self.inarow = self.positive_int_setting("inarow")
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"rows": 3, "columns": 3, "inarow": 3}

    def _reset(self) -> None:
        self.board = [0] * (self.rows * self.columns)
        self.current = 0
        self.moves_played = 0
        self.terminal = False
        self.winning_player: int | None = None
        self.winning_line: list[int] = []
        self.last_action: int | None = None

    def to_move(self) -> list[int]:
        return [] if self.terminal else [self.current]

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        return [cell for cell, mark in enumerate(self.board) if mark == 0]

    def check_action(self, player: int, action: JSON) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if player != self.current:
            raise IllegalAction(player, "it is not this player's turn")
        cell = require_int(player, action, 0, len(self.board) - 1, "cell")
        if self.board[cell]:
            owner = self.board[cell] - 1
            raise IllegalAction(
                player, f"cell {cell} is already taken by player {owner + 1} ({SYMBOLS[owner]})"
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        player = self.current
        cell = actions[player]
        self.board[cell] = player + 1
        self.moves_played += 1
        self.last_action = cell
        line = self._lines_through(cell)
        if line:
            self.winning_player = player
            self.winning_line = line
            self.terminal = True
        elif self.moves_played == len(self.board):
            self.terminal = True
        else:
            self.current = 1 - player

    def _lines_through(self, cell: int) -> list[int]:
        """Cells of every run of ``inarow`` or more marks through ``cell``, sorted.

        Only lines through the last move can have been completed by it, so this
        replaces a scan of the whole board.
        """
        board, rows, columns = self.board, self.rows, self.columns
        row, column = divmod(cell, columns)
        mark = board[cell]
        winning: set[int] = set()
        for row_step, column_step in DIRECTIONS:
            run = [cell]
            for sign in (1, -1):
                next_row, next_column = row + sign * row_step, column + sign * column_step
                while 0 <= next_row < rows and 0 <= next_column < columns:
                    other = next_row * columns + next_column
                    if board[other] != mark:
                        break
                    run.append(other)
                    next_row += sign * row_step
                    next_column += sign * column_step
            if len(run) >= self.inarow:
                winning.update(run)
        return sorted(winning)

    def observation(self, player: int) -> dict[str, JSON]:
        return {"board": list(self.board), "mark": player + 1}

    def is_terminal(self) -> bool:
        return self.terminal

    def winner(self) -> int | None:
        return self.winning_player

    def state(self) -> dict[str, JSON]:
        return {
            "board": list(self.board),
            "rows": self.rows,
            "columns": self.columns,
            "to_move": self.to_move(),
            "winner": self.winning_player,
            "terminal": self.terminal,
            "last_action": self.last_action,
            "winning_line": list(self.winning_line),
        }

    def _status(self) -> str:
        if self.winning_player is not None:
            return f"Player {self.winning_player + 1} ({SYMBOLS[self.winning_player]}) wins"
        if self.terminal:
            return "Draw"
        return f"Player {self.current + 1} ({SYMBOLS[self.current]}) to move"

    def render_text(self) -> str:
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
        return separator.join(lines) + f"\n{self._status()}"

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
