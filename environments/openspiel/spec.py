"""Reading an OpenSpiel game spec: ``openspiel:<game>`` or ``openspiel:<game>(<key>=<value>,...)``.

The spec is parsed here, strictly, before OpenSpiel sees it: each parameter must be one
the game declares, its value of the declared type, and the game one Arena can play (two
to six players, turn-based or simultaneous moves, chance events it can replay from the
match seed, a result only at the end). Every refusal says what was wrong.

How many play is the game's to say: some have a fixed count (bridge: 4), most of the rest
take it as a parameter, whose name differs by game (``players`` in kuhn_poker,
``numPlayers`` in universal_poker). ``players_parameter`` finds it by asking OpenSpiel,
and ``with_players`` sets a spec up for the seats an organizer chose.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import random
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pyspiel

from environments.info import SPEC_PREFIX, InvalidEnvironmentInfo, UnknownEnvironment

#: Longer specs are refused (a spec is a database field and a line in the admin).
MAX_SPEC_LENGTH = 200
#: Arena's seats in a duel: two to six players (as ``core`` and the referee seat).
MIN_PLAYERS = 2
MAX_PLAYERS = 6
#: The largest observation the first position may have, as JSON: a game whose boards
#: are made huge by its parameters is refused before any agent is sent one.
MAX_OBSERVATION_BYTES = 64 * 1024
#: Seconds a new spec's game has to load and reach its first position (``load_new_game``).
TRIAL_SECONDS = 30
PROJECT_ROOT = Path(__file__).resolve().parents[2]
_TRIAL = (
    "import sys\n"
    "from environments.openspiel.spec import load_game, parse_spec\n"
    "load_game(parse_spec(sys.argv[1]))\n"
)
#: Chance events (deals, rolls) drawn at most to reach the first position a player sees.
MAX_OPENING_CHANCE_EVENTS = 10_000

_SPEC = re.compile(r"^(?P<game>[a-z0-9][a-z0-9_]*)(?:\((?P<parameters>[^()]*)\))?$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_TEXT = re.compile(r"^[A-Za-z0-9_.:+\- ]+$")
_BOOLEANS = {"true": True, "false": False}
#: What OpenSpiel raises when it refuses a game or its parameters (nfg_game without its
#: file raises IndexError).
OPENSPIEL_ERRORS = (pyspiel.SpielError, RuntimeError, ValueError, LookupError)


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


@cache
def players_parameter(game: str) -> str | None:
    """The parameter that sets how many play ``game``, as OpenSpiel declares it: an
    integer parameter about players whose default is the number of players the game has
    when loaded with its defaults (``players`` in kuhn_poker, ``num_players`` in
    tiny_hanabi, ``numPlayers`` in universal_poker; not leduc_poker's ``starting_player``,
    0). None when the game's count is fixed (bridge: 4) or no parameter sets it.

    Only the game's defaults are loaded here: some games crash OpenSpiel when one
    parameter changes without the others that must agree with it."""
    game_type = _game_types()[game]
    if game_type.min_num_players == game_type.max_num_players:
        return None
    try:
        default_count = int(pyspiel.load_game(game).num_players())
    except OPENSPIEL_ERRORS:
        return None
    for key, default in sorted(dict(game_type.parameter_specification).items()):
        if isinstance(default, bool) or not isinstance(default, int):
            continue
        if "player" in key.lower() and default == default_count:
            return key
    return None


def with_players(spec: GameSpec, players: int) -> GameSpec:
    """``spec`` set up for ``players`` seats, through the game's own parameter for its
    count (``players_parameter``); InvalidSpec, saying what the game allows, when Arena or
    the game cannot seat that many."""
    if isinstance(players, bool) or not isinstance(players, int):
        raise InvalidSpec(f"the number of players must be a whole number, got {players!r}")
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise InvalidSpec(
            f"Arena seats {MIN_PLAYERS} to {MAX_PLAYERS} players in a duel, not {players}"
        )
    game_type = _game_types()[spec.game]
    low, high = game_type.min_num_players, game_type.max_num_players
    if not low <= players <= high:
        allowed = f"exactly {low}" if low == high else f"{low} to {high}"
        raise InvalidSpec(f"OpenSpiel's {spec.game} is played by {allowed} players, not {players}")
    given = spec.parameter_dict
    parameter = players_parameter(spec.game)
    if parameter is not None and parameter in given:
        if given[parameter] != players:
            raise InvalidSpec(
                f"the spec sets {parameter}={written(given[parameter])} and the seats are "
                f"{players}: give the number of players once"
            )
        return spec
    try:
        current = int(pyspiel.load_game(spec.game, given).num_players())
    except OPENSPIEL_ERRORS as error:
        raise InvalidSpec(f"OpenSpiel refused {spec.canonical}: {error}") from None
    if current == players:
        return spec
    if parameter is None:
        raise InvalidSpec(
            f"no parameter of {spec.game} sets its number of players; it is played by {current}"
        )
    return GameSpec(spec.game, tuple(sorted({**given, parameter: players}.items())))


def load_game(spec: GameSpec) -> pyspiel.Game:
    """The OpenSpiel game of ``spec``, checked to be one Arena can play."""
    try:
        game = pyspiel.load_game(spec.game, spec.parameter_dict)
        problem = playability_problem(game)
    except OPENSPIEL_ERRORS as error:
        raise InvalidSpec(f"OpenSpiel refused {spec.canonical}: {error}") from None
    if problem:
        raise InvalidSpec(f"{spec.canonical}: {problem}")
    return game


def load_new_game(spec: GameSpec) -> pyspiel.Game:
    """``load_game`` for a spec not seen before (an organizer's), tried first in a process
    of its own: some parameters make OpenSpiel crash (universal_poker with numPlayers=3
    but two stacks) or never reach a first position, which must not take the caller (the
    site) with them. InvalidSpec when the trial dies or runs out of time."""
    try:
        trial = subprocess.run(
            [sys.executable, "-c", _TRIAL, spec.canonical],
            cwd=PROJECT_ROOT,
            capture_output=True,
            timeout=TRIAL_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InvalidSpec(
            f"OpenSpiel took over {TRIAL_SECONDS} s to set up {spec.canonical}'s first position"
        ) from None
    if trial.returncode < 0:
        raise InvalidSpec(
            f"OpenSpiel crashed setting up {spec.canonical}: do its parameters agree (a "
            "parameter with a value for each player, such as universal_poker's stack, needs "
            "one for every seat)?"
        )
    # Whatever the trial refused, the load here refuses with its reason.
    return load_game(spec)


def playability_problem(game: pyspiel.Game) -> str:
    """Why Arena cannot play ``game``; "" when it can."""
    game_type = game.get_type()
    players = game.num_players()
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        return (
            f"it has {players} player(s); Arena plays OpenSpiel games of "
            f"{MIN_PLAYERS} to {MAX_PLAYERS} players"
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
        return "it is cooperative (all players always get the same), so nobody can win"
    if not (game_type.provides_observation_string or game_type.provides_information_state_string):
        return "it describes no player's view as text, so a seat could not be shown its part"
    return _observation_size_problem(game)


def _observation_size_problem(game: pyspiel.Game) -> str:
    game_type = game.get_type()
    state = game.new_initial_state()
    # Drawn as a match draws them: always the first outcome may never end the deal
    # (crazy_eights turns its starting card over again while it is an eight).
    draws = random.Random(0)
    for _ in range(MAX_OPENING_CHANCE_EVENTS):
        if not state.is_chance_node():
            break
        actions, weights = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(draws.choices(actions, weights)[0])
    else:
        return f"its chance events go on past {MAX_OPENING_CHANCE_EVENTS} before anyone moves"
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
