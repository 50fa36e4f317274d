"""Quarto: place the piece your opponent gave you, then choose the piece they place.

Pieces are the numbers 0..15 and each of their four bits is one attribute; a line
of four pieces wins when one bit is set in all four or clear in all four.
"""

from __future__ import annotations

import html
from typing import Any, TypeGuard

from environments.base import (
    JSON,
    AlternatingTurns,
    IllegalAction,
    require_int,
    require_object,
    square_name,
)

SIZE = 4
SQUARES = SIZE * SIZE
PIECES = 16
ALL_BITS = PIECES - 1
#: For each bit, the attribute name when the bit is set and when it is clear.
ATTRIBUTES = (("tall", "short"), ("dark", "light"), ("square", "round"), ("hollow", "solid"))
ACTION_KEYS = ("square", "piece")

LINES = (
    *(tuple(range(row * SIZE, (row + 1) * SIZE)) for row in range(SIZE)),
    *(tuple(range(column, SQUARES, SIZE)) for column in range(SIZE)),
    tuple(range(0, SQUARES, SIZE + 1)),
    tuple(range(SIZE - 1, SQUARES - 1, SIZE - 1)),
)
LINES_THROUGH = tuple(tuple(line for line in LINES if square in line) for square in range(SQUARES))


def piece_attributes(piece: int) -> list[str]:
    """The four attribute names of ``piece``, in bit order."""
    return [names[0] if piece >> bit & 1 else names[1] for bit, names in enumerate(ATTRIBUTES)]


def describe_piece(piece: int) -> str:
    return f"piece {piece} ({', '.join(piece_attributes(piece))})"


def _shared_attributes(pieces: list[int]) -> list[str]:
    """Attribute names that every piece of ``pieces`` has."""
    all_set = ALL_BITS
    any_set = 0
    for piece in pieces:
        all_set &= piece
        any_set |= piece
    shared = []
    for bit, (set_name, clear_name) in enumerate(ATTRIBUTES):
        if all_set >> bit & 1:
            shared.append(set_name)
        elif not any_set >> bit & 1:
            shared.append(clear_name)
    return shared


class Quarto(AlternatingTurns):
    name = "quarto"

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        super().__init__(configuration)
        if self.configuration.get("rows") != SIZE or self.configuration.get("columns") != SIZE:
            raise ValueError("quarto is only played on a 4x4 board (rows 4, columns 4)")
        self.reset()

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        return {"rows": SIZE, "columns": SIZE}

    def _reset(self) -> None:
        self.board: list[int | None] = [None] * SQUARES
        # True for a piece on the board or in hand, so unavailable to give.
        self.used = [False] * PIECES
        self.piece_in_hand: int | None = None
        self.placed = 0
        self.current = 0
        self.terminal = False
        self.winning_player = None
        self.winning_line: list[int] = []
        self.winning_attributes: list[str] = []
        self.last_action: dict[str, int | None] | None = None

    def _available(self) -> list[int]:
        return [piece for piece, used in enumerate(self.used) if not used]

    def _is_first_move(self) -> bool:
        return self.piece_in_hand is None

    def legal_actions(self, player: int) -> list[JSON]:
        if self.terminal or player != self.current:
            return []
        available = self._available()
        if self._is_first_move():
            return [{"square": None, "piece": piece} for piece in available]
        empty = [square for square, piece in enumerate(self.board) if piece is None]
        if not available:
            return [{"square": square, "piece": None} for square in empty]
        return [{"square": square, "piece": piece} for square in empty for piece in available]

    def check_action(self, player: int, action: JSON) -> None:
        self.check_turn(player)
        require_object(player, action, ACTION_KEYS, '{"square": ..., "piece": ...}')
        self._check_square(player, action["square"])
        self._check_piece(player, action["piece"])

    def _check_square(self, player: int, square: JSON) -> None:
        if self._is_first_move():
            if square is not None:
                raise IllegalAction(
                    player,
                    f"square must be null on the first move (there is no piece to place yet), "
                    f"got {square!r}",
                )
            return
        if square is None:
            raise IllegalAction(
                player, f"square is null but you must place piece {self.piece_in_hand}"
            )
        square = require_int(player, square, 0, SQUARES - 1, "square")
        if self.board[square] is not None:
            raise IllegalAction(
                player, f"square {square} is already occupied by piece {self.board[square]}"
            )

    def _check_piece(self, player: int, piece: JSON) -> None:
        pieces_left = PIECES - self.placed - (0 if self._is_first_move() else 1)
        if pieces_left == 0:
            if piece is not None:
                raise IllegalAction(
                    player, f"piece must be null: no pieces remain to give, got {piece!r}"
                )
            return
        if piece is None:
            raise IllegalAction(
                player, "piece is null but you must choose the piece your opponent places next"
            )
        piece = require_int(player, piece, 0, PIECES - 1, "piece")
        if piece == self.piece_in_hand:
            raise IllegalAction(
                player, f"piece {piece} is the one you are placing, so it is not available"
            )
        if self.used[piece]:
            raise IllegalAction(
                player,
                f"piece {piece} is already on the board (square {self.board.index(piece)}), "
                "so it is not available",
            )

    def _apply(self, actions: dict[int, JSON]) -> None:
        player = self.current
        square, piece = actions[player]["square"], actions[player]["piece"]
        self.last_action = {"square": square, "piece": piece}
        if square is not None:
            self.board[square] = self.piece_in_hand
            self.piece_in_hand = None
            self.placed += 1
            if self._record_win(square):
                self.winning_player = player
                self.terminal = True
                return
            if self.placed == SQUARES:
                self.terminal = True
                return
        self.piece_in_hand = piece
        self.used[piece] = True
        self.current = 1 - player

    def _record_win(self, square: int) -> bool:
        """Record every line through ``square`` that is now full and shares an attribute."""
        board = self.board
        winning: set[int] = set()
        attributes: list[str] = []
        for line in LINES_THROUGH[square]:
            pieces = [piece for other in line if (piece := board[other]) is not None]
            if len(pieces) < len(line):
                continue
            shared = _shared_attributes(pieces)
            if shared:
                winning.update(line)
                attributes += [name for name in shared if name not in attributes]
        self.winning_line = sorted(winning)
        self.winning_attributes = attributes
        return bool(winning)

    def observation(self, player: int) -> dict[str, JSON]:
        return {
            "board": list(self.board),
            "piece": self.piece_in_hand,
            "available": self._available(),
            "mark": player + 1,
        }

    def state(self) -> dict[str, JSON]:
        return {
            "board": list(self.board),
            "piece": self.piece_in_hand,
            "available": self._available(),
            "to_move": self.to_move(),
            "winner": self.winning_player,
            "terminal": self.terminal,
            "last_action": dict(self.last_action) if self.last_action else None,
            "winning_line": list(self.winning_line),
            "winning_attributes": list(self.winning_attributes),
        }

    def view(self) -> dict[str, JSON]:
        return {
            "kind": "quarto",
            "board": list(self.board),
            "piece": self.piece_in_hand,
            "available": self._available(),
            "last": self.last_action["square"] if self.last_action else None,
            "win": list(self.winning_line),
            "status": self._status(),
        }

    def observation_view(self, observation: dict[str, JSON], player: int) -> dict[str, JSON]:
        return {
            "kind": "quarto",
            "board": list(observation["board"]),
            "piece": observation["piece"],
            "available": list(observation["available"]),
        }

    def describe_action(self, action: JSON) -> str:
        """``c2, gives piece 1``: where the piece in hand goes (squares named a1 to d4,
        ``square_name``), then the piece handed to the opponent; the first move only gives
        a piece, the last only places one."""
        if not isinstance(action, dict):
            return super().describe_action(action)
        square, piece = action.get("square"), action.get("piece")
        parts = []
        if _is_index(square, SQUARES):
            parts.append(square_name(square, SIZE))
        if _is_index(piece, PIECES):
            parts.append(f"gives piece {piece}")
        if len(parts) != sum(value is not None for value in (square, piece)) or not parts:
            return super().describe_action(action)
        return ", ".join(parts)

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        # An action names its square and its piece already, as a drawer needs them.
        return [{"square": action["square"], "piece": action["piece"]} for action in actions]

    def _status(self) -> str:
        if self.winning_player is not None:
            shared = " and ".join(self.winning_attributes)
            return f"Player {self.winning_player + 1} wins with a line of {shared} pieces"
        if self.terminal:
            return "Draw: the board is full"
        if self._is_first_move():
            return f"Player {self.current + 1} to choose the first piece for the opponent"
        assert self.piece_in_hand is not None  # given to the player by the previous move
        return (
            f"Player {self.current + 1} to place {describe_piece(self.piece_in_hand)} "
            "and choose the next piece"
        )

    def render_text(self) -> str:
        text = _board_text(self.board, self.piece_in_hand, self._available())
        return f"{text}\n{self._status()}"

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        text = _board_text(observation["board"], observation["piece"], observation["available"])
        if observation["piece"] is None:
            return f"{text}\nChoose the first piece your opponent must place (square null)."
        return f"{text}\nPlace the piece in hand, then choose the next piece for your opponent."

    def _piece_html(self, piece: int) -> str:
        classes = " ".join(f"quarto-{name}" for name in piece_attributes(piece))
        return (
            f'<span class="quarto-piece {classes}" aria-hidden="true">'
            f'<span class="quarto-number">{piece}</span></span>'
            f'<span class="visually-hidden">{html.escape(describe_piece(piece))}</span>'
        )

    def render_html(self) -> str:
        winning = set(self.winning_line)
        last_square = self.last_action["square"] if self.last_action else None
        rows_html = []
        for row in range(SIZE):
            cells_html = []
            for square in range(row * SIZE, (row + 1) * SIZE):
                piece = self.board[square]
                classes = ["quarto-square-cell"]
                notes = []
                if square == last_square:
                    classes.append("quarto-last")
                    notes.append("last move")
                if square in winning:
                    classes.append("quarto-win")
                    notes.append("winning line")
                if piece is None:
                    content = f'<span class="quarto-empty">{square_name(square, SIZE)}</span>'
                else:
                    content = self._piece_html(piece)
                if notes:
                    note_text = html.escape(", " + ", ".join(notes))
                    content += f'<span class="visually-hidden">{note_text}</span>'
                cells_html.append(f'<td class="{" ".join(classes)}">{content}</td>')
            rows_html.append(f"<tr>{''.join(cells_html)}</tr>")
        in_hand = self._piece_html(self.piece_in_hand) if self.piece_in_hand is not None else "none"
        available_html = "".join(
            f'<li class="quarto-available-piece">{self._piece_html(piece)}</li>'
            for piece in self._available()
        )
        legend = ", ".join(f"{set_name} / {clear_name}" for set_name, clear_name in ATTRIBUTES)
        return (
            '<div class="quarto">'
            '<table class="quarto-board">'
            f'<caption class="quarto-status">{html.escape(self._status())}</caption>'
            f"{''.join(rows_html)}</table>"
            f'<p class="quarto-hand">Piece to place: {in_hand}</p>'
            f'<p class="quarto-available-title">Available pieces:</p>'
            f'<ul class="quarto-available">{available_html}</ul>'
            f'<p class="quarto-legend">Attributes: {html.escape(legend)}</p>'
            "</div>"
        )


def _is_index(value: JSON, count: int) -> TypeGuard[int]:
    """Whether ``value`` is an int in 0..count-1 (a bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count


def _board_text(board: list[Any], piece: int | None, available: list[int]) -> str:
    lines = ["Squares are numbered 0..15 row by row; '..' is empty."]
    for row in range(SIZE):
        row_pieces = board[row * SIZE : (row + 1) * SIZE]
        lines.append(" ".join(".." if piece is None else f"{piece:2d}" for piece in row_pieces))
    if piece is not None:
        lines.append(f"Piece to place: {describe_piece(piece)}")
    lines.append(f"Available: {' '.join(map(str, available)) if available else 'none'}")
    return "\n".join(lines)
