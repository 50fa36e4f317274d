"""The environment API every game implements.

A game is a deterministic state machine: ``reset(seed)`` followed by a list of
``step(actions)`` calls fully describes a match, so a replay stores only the seed
and the actions and recomputes every state from them.

Turn-based and simultaneous-move games share one shape: ``to_move()`` names the
players who must act now (one player for turn-based games, every player for
simultaneous ones) and ``step`` takes one action for each of them, keyed by
player index.
"""

from __future__ import annotations

import html
import json
from typing import Any, ClassVar

JSON = Any
#: The column letters of ``square_name``.
COLUMN_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class IllegalAction(Exception):
    """An action that the rules refuse; ``player`` is the one at fault."""

    def __init__(self, player: int, reason: str) -> None:
        super().__init__(f"player {player + 1}: {reason}")
        self.player = player
        self.reason = reason


class Environment:
    """Base class of every game. Subclasses implement the abstract methods below."""

    #: Folder name under ``environments/``; set by each game.
    name: ClassVar[str] = ""
    #: Seats of the game; a game with a ``players`` setting sets it per instance.
    num_players: int = 2
    #: True when every player acts at every step (rock-paper-scissors).
    simultaneous: ClassVar[bool] = False
    #: The seat that moves first in every match; None when chance or the position decides
    #: (an LLM player's prompt says "you move first" only when it is sure).
    first_seat: ClassVar[int | None] = 0
    #: True when a seat's observation hides something another seat knows (cards in a
    #: hand). Spectators of a running duel then see a match only once it is over, as its
    #: replay shows it; an adapter may set it per game on the instance.
    hidden_information: bool = False

    def __init__(self, configuration: dict[str, JSON] | None = None) -> None:
        self.configuration: dict[str, JSON] = {
            **self.default_configuration(),
            **(configuration or {}),
        }
        self.seed = 0
        self.step_count = 0

    # -- to implement ---------------------------------------------------------

    @classmethod
    def default_configuration(cls) -> dict[str, JSON]:
        """Game parameters sent to agents in the handshake (board size, ...)."""
        return {}

    def _reset(self) -> None:
        raise NotImplementedError

    def to_move(self) -> list[int]:
        """Players who must act now, in increasing order; empty once terminal."""
        raise NotImplementedError

    def legal_actions(self, player: int) -> list[JSON]:
        """Every action ``player`` may take now; empty when it is not their turn."""
        raise NotImplementedError

    def check_action(self, player: int, action: JSON) -> None:
        """Raise IllegalAction with a precise reason unless ``action`` is legal."""
        raise NotImplementedError

    def _apply(self, actions: dict[int, JSON]) -> None:
        """Apply already-validated actions."""
        raise NotImplementedError

    def observation(self, player: int) -> dict[str, JSON]:
        """What ``player`` is allowed to see, as a JSON object."""
        raise NotImplementedError

    def is_terminal(self) -> bool:
        raise NotImplementedError

    def winner(self) -> int | None:
        """The player who won, once terminal; None for a draw or a match still going."""
        raise NotImplementedError

    def state(self) -> dict[str, JSON]:
        """The whole state as JSON (what a replay shows at this step)."""
        raise NotImplementedError

    def render_text(self) -> str:
        raise NotImplementedError

    def render_html(self) -> str:
        """A self-contained HTML fragment of the current state, styled by the
        game's ``static/`` stylesheet (class names prefixed with the game name)."""
        raise NotImplementedError

    def agent_seed(self, seed: int, player: int) -> int:
        """The seed ``player`` is given for its own randomness in a match of ``seed``. The
        match seed itself, unless the game draws hidden chance events from it (an OpenSpiel
        game), which an agent knowing the seed could foresee."""
        return seed

    def first_to_move(self, seed: int) -> int | None:
        """The seat that moves first in a match started from ``seed``, as the game says (in
        chess White, OpenSpiel's second seat; in backgammon whoever the opening roll
        favours); None when everyone moves at once. Resets the game."""
        self.reset(seed)
        movers = self.to_move()
        return movers[0] if len(movers) == 1 else None

    def describe_action(self, action: JSON) -> str:
        """An action as a person reads it in a replay's move list (``readable_action``)."""
        return readable_action(action)

    def seat_side(self, seat: int) -> str:
        """The side ``seat`` plays, as spectators are told it beside its name (``X``,
        ``red``, ``White``); "" in a game whose seats have no side of their own."""
        return ""

    def render_observation(self, observation: dict[str, JSON], player: int) -> str:
        """What ``player`` sees, as text for a reader (an LLM's prompt). Built from the
        observation alone, never from the state, so that hidden information stays
        hidden; by default the observation's JSON."""
        return json.dumps(observation, sort_keys=True)

    # -- drawing in the browser (``web/static/web/boards.js``) -----------------

    def view(self) -> dict[str, JSON]:
        """A compact JSON picture of the whole state, drawn in the browser by the drawer
        its ``kind`` names (a replay carries one per step). By default the game's own
        HTML, which the default drawer shows as it is; a game with a drawer of its own
        (``static/<game>.js``) returns the data it needs instead (a board, a FEN)."""
        return {"kind": "html", "html": self.render_html()}

    def observation_view(self, observation: dict[str, JSON], player: int) -> dict[str, JSON]:
        """The picture ``player`` is shown while playing by hand: drawn from its own
        observation alone, never from the state, so that hidden information stays
        hidden. By default the observation as text (``render_observation``)."""
        return {"kind": "text", "text": self.render_observation(observation, player)}

    def choice_parts(
        self, observation: dict[str, JSON], player: int, actions: list[JSON]
    ) -> list[dict[str, JSON]]:
        """For each of ``actions`` (legal for ``player``, who sees ``observation``), what
        it means on the board a drawer draws: a cell, a column, a from-square and a
        to-square. An empty object is a move the board cannot show, offered as a
        labelled button."""
        return [{} for _action in actions]

    # -- shared behaviour -----------------------------------------------------

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.step_count = 0
        self._reset()

    def step(self, actions: dict[int, JSON]) -> None:
        """Validate then apply one action for each player in ``to_move()``.

        Nothing changes when any action is illegal. When several are illegal the
        lowest player index is reported; the referee checks each player on its own
        with ``check_action`` (for exact blame) and then calls ``apply``.
        """
        movers = self.to_move()
        if not movers:
            raise IllegalAction(min(actions, default=0), "the match is already over")
        for player in sorted(actions):
            if player not in movers:
                raise IllegalAction(player, "it is not this player's turn")
        for player in movers:
            if player not in actions:
                raise IllegalAction(player, "no action given")
            self.check_action(player, actions[player])
        self.apply(actions)

    def apply(self, actions: dict[int, JSON]) -> None:
        """Apply actions that ``check_action`` accepted, one for each player in ``to_move()``."""
        self._apply(actions)
        self.step_count += 1

    def positive_int_setting(self, key: str) -> int:
        """A configuration value that must be a positive integer (a board size, a target)."""
        value = self.configuration[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{self.name}: {key} must be a positive integer, got {value!r}")
        return value

    def scores(self) -> list[float]:
        """Match points once terminal: 1 for a win, 0 for a loss, 0.5 each for a draw."""
        if not self.is_terminal():
            return [0.0] * self.num_players
        winner = self.winner()
        if winner is None:
            return [1.0 / self.num_players] * self.num_players
        return [1.0 if player == winner else 0.0 for player in range(self.num_players)]

    def render_html_page(self) -> str:
        """A standalone page around ``render_html``; used by tests and previews."""
        return (
            "<!doctype html><meta charset=utf-8>"
            f"<title>{html.escape(self.name)}</title>"
            f"<body>{self.render_html()}</body>"
        )


class AlternatingTurns(Environment):
    """Two players moving in turn until one wins or neither can (k-in-a-row games,
    Quarto). ``_reset`` and the moves keep whose turn it is (``current``), whether the
    match is over (``terminal``) and who won (``winning_player``); the rest follows."""

    current: int
    terminal: bool
    winning_player: int | None

    def check_turn(self, player: int) -> None:
        if self.terminal:
            raise IllegalAction(player, "the match is already over")
        if player != self.current:
            raise IllegalAction(player, "it is not this player's turn")

    def to_move(self) -> list[int]:
        return [] if self.terminal else [self.current]

    def is_terminal(self) -> bool:
        return self.terminal

    def winner(self) -> int | None:
        return self.winning_player


def shares_beaten(values: list[float]) -> list[float]:
    """Each player's match score from a number where more is better (points, chips won):
    the share of the other players it beat, a tie counting half. 1 for the sole best, 0 for
    the sole worst, equal values equal scores; with two players the usual 1, 0 or 0.5
    each. The scores rank the players as the values do (``referee.results``)."""
    others = len(values) - 1
    return [
        sum(
            1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
            for other, theirs in enumerate(values)
            if other != player
        )
        / others
        for player, mine in enumerate(values)
    ]


def readable_action(action: JSON) -> str:
    """An action as a person reads it: ``4``, ``rock``, ``{"square": 3, "piece": 5}``."""
    if isinstance(action, str):
        return action
    return json.dumps(action, ensure_ascii=False)


def square_name(square: int, columns: int) -> str:
    """A square of a board numbered row by row from the top left (square 0), as move lists
    name it: its column's letter, ``a`` at the left, then its row's number, ``1`` at the
    top, so that square 6 of a 4-column board is ``c2``. A board too wide for letters
    names it in words (``row 2, column 30``)."""
    row, column = divmod(square, columns)
    if columns > len(COLUMN_LETTERS):
        return f"row {row + 1}, column {column + 1}"
    return f"{COLUMN_LETTERS[column]}{row + 1}"


def require_int(player: int, action: JSON, low: int, high: int, what: str) -> int:
    """Check that ``action`` is an int in [low, high]; booleans are not ints here."""
    if isinstance(action, bool) or not isinstance(action, int):
        raise IllegalAction(
            player, f"{what} must be an integer, got {type(action).__name__} {action!r}"
        )
    if action < low or action > high:
        raise IllegalAction(player, f"{what} {action} is out of range {low}..{high}")
    return action


def require_object(player: int, action: JSON, keys: tuple[str, ...], shape: str) -> dict[str, JSON]:
    """Check that ``action`` is an object with exactly ``keys``; ``shape`` shows an agent
    what one looks like (``{"square": ..., "piece": ...}``)."""
    if not isinstance(action, dict):
        raise IllegalAction(
            player, f"action must be an object {shape}, got {type(action).__name__} {cut(action)}"
        )
    missing = [key for key in keys if key not in action]
    unexpected = [key for key in action if key not in keys]
    if missing or unexpected:
        problems = [f"missing {key!r}" for key in missing]
        problems += [f"unexpected {cut(key)}" for key in unexpected]
        raise IllegalAction(
            player,
            f"action must have exactly the keys {' and '.join(map(repr, keys))} "
            f"({', '.join(problems)})",
        )
    return action


def cut(value: JSON, limit: int = 80) -> str:
    """``repr(value)``, shortened to ``limit`` characters for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def replay(environment: Environment, seed: int, actions: list[list[JSON]]) -> list[dict[str, JSON]]:
    """Every state of a match, recomputed from its seed and actions.

    ``actions`` holds one entry per step: a list with one slot per player, the
    action of each player who moved and None for the others.
    """
    environment.reset(seed)
    states = [environment.state()]
    for step_actions in actions:
        environment.step(
            {player: action for player, action in enumerate(step_actions) if action is not None}
        )
        states.append(environment.state())
    return states
