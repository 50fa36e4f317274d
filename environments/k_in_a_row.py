"""What tic-tac-toe and Connect Four share: a rectangle of cells, two players taking
turns, a win for ``inarow`` marks in a line (horizontal, vertical or diagonal), the
status, and the HTML board (each game draws its cells).

The board is kaggle-environments' layout: row-major with the top row first, 0 for an
empty cell and ``player + 1`` for a player's mark, so kaggle agents play unchanged.
"""

from __future__ import annotations

import functools
import html

from environments.base import JSON, AlternatingTurns

# (row step, column step): horizontal, vertical, diagonal, anti-diagonal.
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


class KInARow(AlternatingTurns):
    """A game on ``rows`` x ``columns`` cells; a subclass says where a move's mark goes."""

    #: Each player's side as the status names it (player 1's first).
    sides: tuple[str, str]
    #: The status once the board is full without a line.
    draw_status = "Draw: the board is full"

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        self.rows = self.positive_int_setting("rows")
        self.columns = self.positive_int_setting("columns")
        self.inarow = self.positive_int_setting("inarow")
        # Computed once per board, not per game: a duel makes a game, and a short duel
        # would spend a tenth of a millisecond on them.
        self.rays = _rays(self.rows, self.columns)
        self.win_shifts = _win_shifts(self.columns, self.inarow)
        self.reset()

    def _reset(self) -> None:
        self.board = [0] * (self.rows * self.columns)
        #: Each player's marks as the bits of an integer (``_win_shifts``).
        self.bitboards = [0, 0]
        self.current = 0
        self.moves_played = 0
        self.terminal = False
        self.winning_player = None
        self.winning_line: list[int] = []
        self.last_action: int | None = None
        self.last_cell: int | None = None

    def place(self, cell: int, action: int) -> None:
        """The current player's mark goes on ``cell``; then a win, a draw or the next turn."""
        player = self.current
        self.board[cell] = player + 1
        marks = self.bitboards[player] | 1 << (cell + cell // self.columns)
        self.bitboards[player] = marks
        self.moves_played += 1
        self.last_action = action
        self.last_cell = cell
        # Fewer moves than this cannot hold a line of ``inarow`` marks of one player.
        if self.moves_played >= 2 * self.inarow - 1 and self._has_line(marks):
            self.winning_player = player
            self.winning_line = self._lines_through(cell)
            self.terminal = True
        elif self.moves_played == len(self.board):
            self.terminal = True
        else:
            self.current = 1 - player

    def _has_line(self, marks: int) -> bool:
        """Whether the marks hold a line of ``inarow`` (``_win_shifts``)."""
        for sequence in self.win_shifts:
            starts = marks
            for shift in sequence:
                starts &= starts >> shift
            if starts:
                return True
        return False

    def _lines_through(self, cell: int, board: list[int] | None = None) -> list[int]:
        """Cells of every run of ``inarow`` or more marks through ``cell`` (of ``board``,
        by default the game's), sorted (the winning line, once ``_has_line`` has seen one:
        only lines through the last move can have been completed by it)."""
        board = self.board if board is None else board
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

    def board_text(self) -> str:
        raise NotImplementedError

    def symbol_of(self, mark: int) -> str:
        raise NotImplementedError

    def side_of(self, mark: int) -> str:
        """The side of a player's ``mark``, as a person is told "You play ..."."""
        return self.symbol_of(mark)

    def seat_side(self, seat: int) -> str:
        return self.sides[seat] if 0 <= seat < len(self.sides) else ""

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        # A board of its own to draw on (made once: its rays cost a little to compute).
        scratch = self.__dict__.get("_observer") or type(self)(self.configuration)
        self.__dict__["_observer"] = scratch
        scratch.board = [int(mark) for mark in observation["board"]]
        mark = int(observation.get("mark", player + 1))
        return f"{scratch.board_text()}\nYou play {scratch.symbol_of(mark)}, mark {mark}."

    def _status(self) -> str:
        if self.winning_player is not None:
            return f"Player {self.winning_player + 1} ({self.sides[self.winning_player]}) wins"
        if self.terminal:
            return self.draw_status
        return f"Player {self.current + 1} ({self.sides[self.current]}) to move"

    def render_text(self) -> str:
        return f"{self.board_text()}\n{self._status()}"

    def render_html(self) -> str:
        """The board as a table whose classes start with the game's name (``tic-tac-toe-``):
        the last move's cell and the winning line marked, and said in words."""
        prefix = self.name.replace("_", "-")
        winning = set(self.winning_line)
        rows_html = []
        for row in range(self.rows):
            cells_html = []
            for column in range(self.columns):
                cell = row * self.columns + column
                marked = []
                notes = ""
                if cell == self.last_cell:
                    marked.append(f"{prefix}-last")
                    notes += ", last move"
                if cell in winning:
                    marked.append(f"{prefix}-win")
                    notes += ", winning line"
                cells_html.append(self._cell_html(row, column, self.board[cell], marked, notes))
            rows_html.append(f"<tr>{''.join(cells_html)}</tr>")
        return (
            f'<div class="{prefix}">'
            f'<table class="{prefix}-board">'
            f'<caption class="{prefix}-status">{html.escape(self._status())}</caption>'
            f"{self._rows_html(rows_html)}</table></div>"
        )

    def _cell_html(self, row: int, column: int, mark: int, marked: list[str], notes: str) -> str:
        """A cell of ``render_html``'s board; ``marked`` and ``notes`` say, as classes and in
        words (", last move"), whether it is the last move's and in the winning line."""
        raise NotImplementedError

    def _rows_html(self, rows_html: list[str]) -> str:
        """What ``render_html``'s table holds: its rows, and a head if the game has one."""
        return "".join(rows_html)

    def _board_view(self, board: list[int]) -> dict[str, JSON]:
        # One digit a cell (0 empty, 1 and 2 the players' marks): a replay carries one
        # board a step.
        return {
            "kind": self.name,
            "rows": self.rows,
            "columns": self.columns,
            "board": "".join(str(mark) for mark in board),
        }

    def view(self) -> dict[str, JSON]:
        return {
            **self._board_view(self.board),
            "last": self.last_cell,
            "win": list(self.winning_line),
            "status": self._status(),
        }

    def observation_view(self, observation: dict[str, JSON], player: int) -> dict[str, JSON]:
        mark = int(observation.get("mark", player + 1))
        board = [int(cell) for cell in observation["board"]]
        # The winning line, once there is one (the board shows everything: nothing hidden).
        winning = {
            line_cell
            for cell, held in enumerate(board)
            if held
            for line_cell in self._lines_through(cell, board)
        }
        return {**self._board_view(board), "you": self.side_of(mark), "win": sorted(winning)}

    def observation(self, player: int) -> dict[str, JSON]:
        return {"board": self.board[:], "mark": player + 1}

    def state(self) -> dict[str, JSON]:
        return {
            "board": self.board[:],
            "rows": self.rows,
            "columns": self.columns,
            "to_move": self.to_move(),
            "winner": self.winning_player,
            "terminal": self.terminal,
            "last_action": self.last_action,
            "winning_line": list(self.winning_line),
        }


@functools.cache
def _win_shifts(columns: int, inarow: int) -> tuple[tuple[int, ...], ...]:
    """For each direction, the right shifts whose ANDs leave a bit set exactly where a
    line of ``inarow`` marks starts.

    Cell (row, column) is bit ``row * (columns + 1) + column``: a spare bit at the end
    of each row keeps a line from running on into the next one. One direction's step is
    1 bit (along a row), ``columns + 1`` (down a column) or one more or less (the
    diagonals). ANDing the marks with themselves shifted by a step leaves the starts of
    runs of two; with that shifted by two steps, runs of four: doubling, a few integer
    operations a direction whatever the board, where following each line through the
    last cell took a loop a cell.
    """
    width = columns + 1
    shifts: list[tuple[int, ...]] = []
    for step in (1, width, width + 1, width - 1):
        sequence = []
        length = 1
        while length < inarow:
            more = min(length, inarow - length)
            sequence.append(more * step)
            length += more
        shifts.append(tuple(sequence))
    return tuple(shifts)


#: For each cell, for each direction, the cells outward on either side.
Rays = tuple[tuple[tuple[tuple[int, ...], tuple[int, ...]], ...], ...]


@functools.cache
def _rays(rows: int, columns: int) -> Rays:
    """For each cell and direction, the cells outward on either side, nearest first.

    Computed once per board so that the win check after a move only compares board
    cells, without any bounds arithmetic.
    """
    rays = []
    for cell in range(rows * columns):
        row, column = divmod(cell, columns)
        cell_rays: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        for row_step, column_step in DIRECTIONS:
            sides = []
            for sign in (1, -1):
                side = []
                next_row, next_column = row + sign * row_step, column + sign * column_step
                while 0 <= next_row < rows and 0 <= next_column < columns:
                    side.append(next_row * columns + next_column)
                    next_row += sign * row_step
                    next_column += sign * column_step
                sides.append(tuple(side))
            cell_rays.append((sides[0], sides[1]))
        rays.append(tuple(cell_rays))
    return tuple(rays)
