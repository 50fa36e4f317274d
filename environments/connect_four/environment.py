"""Connect Four: drop discs into columns, four in a row wins (6x7 by default; the board and
the win are ``environments.k_in_a_row``'s).
"""

from __future__ import annotations

import html

from environments.base import JSON, IllegalAction, require_int
from environments.k_in_a_row import KInARow

COLOURS = ("red", "yellow")
SYMBOLS = ("X", "O")


class ConnectFour(KInARow):
    name = "connect_four"
    sides = COLOURS

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"rows": 6, "columns": 7, "inarow": 4}

    def _reset(self) -> None:
        super()._reset()
        # Discs per column: the next disc lands in row ``rows - 1 - height``.
        self.heights = [0] * self.columns
        #: The columns not full yet, in order (asked for at every move).
        self.open_columns: list[JSON] = list(range(self.columns))

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        return self.open_columns[:]

    def check_action(self, player: int, action: JSON) -> None:
        self.check_turn(player)
        column = require_int(player, action, 0, self.columns - 1, "column")
        if self.heights[column] >= self.rows:
            raise IllegalAction(player, f"column {column} is full")

    def _apply(self, actions: dict[int, JSON]) -> None:
        column = actions[self.current]
        assert isinstance(column, int)  # checked by check_action
        height = self.heights[column]
        self.heights[column] = height + 1
        if height + 1 == self.rows:
            self.open_columns.remove(column)
        self.place((self.rows - 1 - height) * self.columns + column, column)

    def state(self) -> dict[str, JSON]:
        # The column played is the action; the cell the disc landed on is shown too.
        return {**super().state(), "last_cell": self.last_cell}

    def describe_action(self, action: JSON) -> str:
        """``column 3``: numbered from 0 at the left, as the board's header numbers them."""
        if isinstance(action, int) and not isinstance(action, bool) and 0 <= action < self.columns:
            return f"column {action}"
        return super().describe_action(action)

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        return [{"column": action} for action in actions]

    def symbol_of(self, mark: int) -> str:
        return f"{SYMBOLS[mark - 1]} ({COLOURS[mark - 1]})"

    def side_of(self, mark: int) -> str:
        return f"{COLOURS[mark - 1]} ({SYMBOLS[mark - 1]})"

    def board_text(self) -> str:
        width = len(str(self.columns - 1))
        lines = [" ".join(str(column).rjust(width) for column in range(self.columns))]
        for row in range(self.rows):
            row_cells = self.board[row * self.columns : (row + 1) * self.columns]
            lines.append(
                " ".join((SYMBOLS[mark - 1] if mark else ".").rjust(width) for mark in row_cells)
            )
        legend = f"{SYMBOLS[0]} = player 1 ({COLOURS[0]}), {SYMBOLS[1]} = player 2 ({COLOURS[1]})"
        return "\n".join(lines) + f"\n{legend}"

    def _cell_html(self, row: int, column: int, mark: int, marked: list[str], notes: str) -> str:
        description = (COLOURS[mark - 1] if mark else "empty") + notes
        disc = f" connect-four-player-{mark}" if mark else ""
        return (
            f'<td class="{" ".join(["connect-four-cell", *marked])}">'
            f'<span class="connect-four-disc{disc}" aria-hidden="true"></span>'
            f'<span class="visually-hidden">{html.escape(description)}</span></td>'
        )

    def _rows_html(self, rows_html: list[str]) -> str:
        header = "".join(
            f'<th scope="col" class="connect-four-column">{column}</th>'
            for column in range(self.columns)
        )
        return f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows_html)}</tbody>"
