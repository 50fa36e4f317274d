"""Reading an OpenSpiel game spec: ``openspiel:<game>`` or ``openspiel:<game>(<key>=<value>,...)``.

The spec is parsed here, strictly, before OpenSpiel sees it: each parameter must be one
the game declares, its value of the declared type, and the game one Arena can play (two
players, turn-based or simultaneous moves, chance events it can replay from the match
seed, a result only at the end). Every refusal says what was wrong.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from functools import cache
from typing import Any

import pyspiel

from environments.info import SPEC_PREFIX, InvalidEnvironmentInfo, UnknownEnvironment

#: Longer specs are refused (a spec is a database field and a line in the admin).
MAX_SPEC_LENGTH = 200
#: Arena's seats: the N-player work lifts this (``core`` and the referee seat two).
SUPPORTED_PLAYERS = (2,)
#: The largest observation the first position may have, as JSON: a game whose boards
#: are made huge by its parameters is refused before any agent is sent one.
MAX_OBSERVATION_BYTES = 64 * 1024

_SPEC = re.compile(r"^(?P<game>[a-z0-9][a-z0-9_]*)(?:\((?P<parameters>[^()]*)\))?$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_TEXT = re.compile(r"^[A-Za-z0-9_.:+\- ]+$")
_BOOLEANS = {"true": True, "false": False}


class UnknownGame(UnknownEnvironment):
    """The spec names no game OpenSpiel has."""


class InvalidSpec(InvalidEnvironmentInfo):
    """The spec is malformed, has a bad parameter, or names a game Arena cannot play."""


Value = bool | int | float | str


@dataclasses.dataclass(frozen=True)
class GameSpec:
    """A parsed spec: the game's short name and the parameters given, by name."""

    game: str
    parameters: tuple[tuple[str, Value], ...]

    @property
    def canonical(self) -> str:
        """The spec written one way: parameters sorted by name, values in their type's
        usual form (so two spellings of one game are one environment)."""
        if not self.parameters:
            return f"{SPEC_PREFIX}{self.game}"
        parameters = ",".join(f"{key}={written(value)}" for key, value in self.parameters)
        return f"{SPEC_PREFIX}{self.game}({parameters})"

    @property
    def parameter_dict(self) -> dict[str, Value]:
        return dict(self.parameters)


def written(value: Value) -> str:
    """A parameter's value as a spec writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


@cache
def _game_types() -> dict[str, Any]:
    return {game_type.short_name: game_type for game_type in pyspiel.registered_games()}


def parse_spec(spec: str) -> GameSpec:
    """The spec's game and typed parameters; UnknownGame or InvalidSpec, with the reason."""
    if not isinstance(spec, str) or not spec.startswith(SPEC_PREFIX):
        raise InvalidSpec(f"an OpenSpiel spec starts with {SPEC_PREFIX!r}, got {spec!r}")
    if len(spec) > MAX_SPEC_LENGTH:
        raise InvalidSpec(f"the spec is longer than {MAX_SPEC_LENGTH} characters")
    body = spec[len(SPEC_PREFIX) :].strip()
    matched = _SPEC.match(body)
    if matched is None:
        raise InvalidSpec(
            f"{spec!r} is not of the form openspiel:<game> or "
            "openspiel:<game>(<name>=<value>,...), e.g. openspiel:go(board_size=9)"
        )
    game = matched.group("game")
    game_type = _game_types().get(game)
    if game_type is None:
        close = difflib.get_close_matches(game, _game_types(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownGame(f"OpenSpiel has no game named {game!r}{hint}")
    declared: dict[str, Any] = dict(game_type.parameter_specification)
    parameters: dict[str, Value] = {}
    text = matched.group("parameters")
    for item in text.split(",") if text is not None and text.strip() else []:
        key, equals, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not equals or not _KEY.match(key) or not raw:
            raise InvalidSpec(f"{item.strip()!r} in {spec!r} is not of the form <name>=<value>")
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise InvalidSpec(f"{game} has no parameter {key!r} (its parameters: {known})")
        if key in parameters:
            raise InvalidSpec(f"parameter {key!r} is given twice")
        parameters[key] = _typed(game, key, raw, declared[key])
    return GameSpec(game, tuple(sorted(parameters.items())))


def _typed(game: str, key: str, raw: str, default: Any) -> Value:
    """``raw`` read as the type of the parameter's default value."""
    wanted = type(default).__name__
    if isinstance(default, bool):
        if raw.lower() in _BOOLEANS:
            return _BOOLEANS[raw.lower()]
    elif isinstance(default, int):
        if _INT.match(raw):
            return int(raw)
    elif isinstance(default, float):
        if _FLOAT.match(raw):
            return float(raw)
    elif isinstance(default, str):
        if key.lower().endswith(("file", "filename", "path")):
            raise InvalidSpec(
                f"{game}'s parameter {key!r} names a file on the server: not allowed here"
            )
        if _TEXT.match(raw):
            return raw
        wanted = "text of letters, digits, spaces and _ . : + -"
    else:
        raise InvalidSpec(
            f"{game}'s parameter {key!r} takes a whole game: games wrapping other games are "
            "not supported"
        )
    raise InvalidSpec(f"{game}'s parameter {key!r} must be {wanted}, got {raw!r}")


def load_game(spec: GameSpec) -> pyspiel.Game:
    """The OpenSpiel game of ``spec``, checked to be one Arena can play."""
    try:
        game = pyspiel.load_game(spec.game, spec.parameter_dict)
        problem = playability_problem(game)
    except (pyspiel.SpielError, RuntimeError, ValueError) as error:
        raise InvalidSpec(f"OpenSpiel refused {spec.canonical}: {error}") from None
    if problem:
        raise InvalidSpec(f"{spec.canonical}: {problem}")
    return game


def playability_problem(game: pyspiel.Game) -> str:
    """Why Arena cannot play ``game``; "" when it can."""
    game_type = game.get_type()
    players = game.num_players()
    if players not in SUPPORTED_PLAYERS:
        return (
            f"it has {players} player(s); Arena plays OpenSpiel games of "
            f"{' or '.join(map(str, SUPPORTED_PLAYERS))} players for now"
        )
    if game_type.dynamics not in (
        pyspiel.GameType.Dynamics.SEQUENTIAL,
        pyspiel.GameType.Dynamics.SIMULTANEOUS,
    ):
        return "it is not played in turns or simultaneous moves (a mean-field game)"
    if game_type.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
        return (
            "its chance events are drawn inside OpenSpiel, so the referee could not replay "
            "them from the match seed"
        )
    if game_type.reward_model != pyspiel.GameType.RewardModel.TERMINAL:
        return "it gives rewards during play; Arena scores a match by its final result only"
    if game_type.utility == pyspiel.GameType.Utility.IDENTICAL:
        return "it is cooperative (both players always get the same), so nobody can win"
    if not (game_type.provides_observation_string or game_type.provides_information_state_string):
        return "it describes no player's view as text, so a seat could not be shown its part"
    return _observation_size_problem(game)


def _observation_size_problem(game: pyspiel.Game) -> str:
    game_type = game.get_type()
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    if state.is_terminal():
        return "it is over before anyone moves"
    texts = []
    if game_type.provides_observation_string:
        texts.append(state.observation_string(0))
    if game_type.provides_information_state_string:
        texts.append(state.information_state_string(0))
    size = len(json.dumps(texts))
    if size > MAX_OBSERVATION_BYTES:
        return (
            f"a player's view of the first position is {size} bytes, over Arena's "
            f"{MAX_OBSERVATION_BYTES} (are its parameters too large?)"
        )
    return ""
