"""Connect Four: drop discs into columns, four in a row wins (6x7 by default).

The board is kaggle-environments' layout: row-major with the top row first, 0 for
an empty cell and ``player + 1`` for a disc, so kaggle agents play unchanged.
"""

from __future__ import annotations

import html

from environments.base import JSON, Environment, IllegalAction, require_int

COLOURS = ("red", "yellow")
SYMBOLS = ("X", "O")
# (row step, column step): horizontal, vertical, diagonal, anti-diagonal.
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


class ConnectFour(Environment):
    name = "connect_four"

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        self.rows = self.positive_int_setting("rows")
        self.columns = self.positive_int_setting("columns")
        self.inarow = self.positive_int_setting("inarow")
        self.rays = self._rays()
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"rows": 6, "columns": 7, "inarow": 4}

    def _reset(self) -> None:
        self.board = [0] * (self.rows * self.columns)
        # Discs per column: the next disc lands in row ``rows - 1 - height``.
        self.heights = [0] * self.columns
        self.current = 0
        self.moves_played = 0
        self.terminal = False
        self.winning_player: int | None = None
        self.winning_line: list[int] = []
        self.last_action: int | None = None
        self.last_cell: int | None = None

    def to_move(self) -> list[int]:
        return [] if self.terminal else [self.current]

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        rows = self.rows
        return [column for column, height in enumerate(self.heights) if height < rows]

    def check_action(self, player: int, action: JSON) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if player != self.current:
            raise IllegalAction(player, "it is not this player's turn")
        column = require_int(player, action, 0, self.columns - 1, "column")
        if self.heights[column] >= self.rows:
            raise IllegalAction(player, f"column {column} is full")

    def _apply(self, actions: dict[int, JSON]) -> None:
        player = self.current
        column = actions[player]
        height = self.heights[column]
        cell = (self.rows - 1 - height) * self.columns + column
        self.board[cell] = player + 1
        self.heights[column] = height + 1
        self.moves_played += 1
        self.last_action = column
        self.last_cell = cell
        line = self._lines_through(cell) if self.moves_played >= 2 * self.inarow - 1 else []
        if line:
            self.winning_player = player
            self.winning_line = line
            self.terminal = True
        elif self.moves_played == len(self.board):
            self.terminal = True
        else:
            self.current = 1 - player

    def _rays(self) -> list[list[tuple[list[int], list[int]]]]:
        """For each cell and direction, the cells outward on either side, nearest first.

        Computed once per configuration so that the win check after a move only
        compares board cells, without any bounds arithmetic.
        """
        rows, columns = self.rows, self.columns
        rays = []
        for cell in range(rows * columns):
            row, column = divmod(cell, columns)
            cell_rays = []
            for row_step, column_step in DIRECTIONS:
                sides = []
                for sign in (1, -1):
                    side = []
                    next_row, next_column = row + sign * row_step, column + sign * column_step
                    while 0 <= next_row < rows and 0 <= next_column < columns:
                        side.append(next_row * columns + next_column)
                        next_row += sign * row_step
                        next_column += sign * column_step
                    sides.append(side)
                cell_rays.append((sides[0], sides[1]))
            rays.append(cell_rays)
        return rays

    def _lines_through(self, cell: int) -> list[int]:
        """Cells of every run of ``inarow`` or more discs through ``cell``, sorted.

        Only lines through the last disc can have been completed by it, so this
        replaces a scan of the whole board and keeps a move O(inarow).
        """
        board = self.board
        mark = board[cell]
        winning: list[int] = []
        for forward, backward in self.rays[cell]:
            ahead = 0
            for other in forward:
                if board[other] != mark:
                    break
                ahead += 1
            behind = 0
            for other in backward:
                if board[other] != mark:
                    break
                behind += 1
            if ahead + behind + 1 >= self.inarow:
                winning += [cell, *forward[:ahead], *backward[:behind]]
        return sorted(set(winning))

    def observation(self, player: int) -> dict[str, JSON]:
        return {"board": self.board[:], "mark": player + 1}

    def is_terminal(self) -> bool:
        return self.terminal

    def winner(self) -> int | None:
        return self.winning_player

    def state(self) -> dict[str, JSON]:
        return {
            "board": self.board[:],
            "rows": self.rows,
            "columns": self.columns,
            "to_move": self.to_move(),
            "winner": self.winning_player,
            "terminal": self.terminal,
            "last_action": self.last_action,
            "last_cell": self.last_cell,
            "winning_line": list(self.winning_line),
        }

    def _status(self) -> str:
        if self.winning_player is not None:
            return f"Player {self.winning_player + 1} ({COLOURS[self.winning_player]}) wins"
        if self.terminal:
            return "Draw: the board is full"
        return f"Player {self.current + 1} ({COLOURS[self.current]}) to move"

    def render_text(self) -> str:
        width = len(str(self.columns - 1))
        lines = [" ".join(str(column).rjust(width) for column in range(self.columns))]
        for row in range(self.rows):
            row_cells = self.board[row * self.columns : (row + 1) * self.columns]
            lines.append(
                " ".join((SYMBOLS[mark - 1] if mark else ".").rjust(width) for mark in row_cells)
            )
        legend = f"{SYMBOLS[0]} = player 1 ({COLOURS[0]}), {SYMBOLS[1]} = player 2 ({COLOURS[1]})"
        return "\n".join(lines) + f"\n{legend}\n{self._status()}"

    def render_html(self) -> str:
        winning = set(self.winning_line)
        header = "".join(
            f'<th scope="col" class="connect-four-column">{column}</th>'
            for column in range(self.columns)
        )
        rows_html = []
        for row in range(self.rows):
            cells_html = []
            for column in range(self.columns):
                cell = row * self.columns + column
                mark = self.board[cell]
                classes = ["connect-four-cell"]
                description = COLOURS[mark - 1] if mark else "empty"
                if cell == self.last_cell:
                    classes.append("connect-four-last")
                    description += ", last move"
                if cell in winning:
                    classes.append("connect-four-win")
                    description += ", winning line"
                disc = f" connect-four-player-{mark}" if mark else ""
                cells_html.append(
                    f'<td class="{" ".join(classes)}">'
                    f'<span class="connect-four-disc{disc}" aria-hidden="true"></span>'
                    f'<span class="connect-four-hidden">{html.escape(description)}</span></td>'
                )
            rows_html.append(f"<tr>{''.join(cells_html)}</tr>")
        return (
            '<div class="connect-four">'
            '<table class="connect-four-board">'
            f'<caption class="connect-four-status">{html.escape(self._status())}</caption>'
            f"<thead><tr>{header}</tr></thead>"
            f"<tbody>{''.join(rows_html)}</tbody></table></div>"
        )
