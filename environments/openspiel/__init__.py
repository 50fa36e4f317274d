"""OpenSpiel games as Arena environments, named by a spec such as ``openspiel:chess`` or
``openspiel:go(board_size=9)`` (``environments.registry`` sends such names here).

``spec.py`` reads and checks a spec, ``adapter.py`` plays the game, ``games.yml`` holds
the default limits and texts of each game, ``static/`` the replays' stylesheet.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

import pyspiel
import yaml

from environments.info import EnvironmentInfo, InvalidEnvironmentInfo, info_values
from environments.openspiel.adapter import OpenSpielEnvironment
from environments.openspiel.spec import (
    GameSpec,
    InvalidSpec,
    UnknownGame,
    load_game,
    load_new_game,
    parse_spec,
    with_players,
    written,
)

__all__ = [
    "GameSpec",
    "InvalidSpec",
    "OpenSpielEnvironment",
    "OpenSpielInfo",
    "UnknownGame",
    "canonical_spec",
    "load_spec_class",
    "load_spec_info",
]

FOLDER = Path(__file__).resolve().parent
GAMES_FILE = FOLDER / "games.yml"
#: Appended to every game's rules: how a seat sees the game and answers here.
PLAYING_HERE = (
    "How it is played here: your observation is an object with the game's name, your "
    "player index (0 for player 1), to_move (the players to act now), and "
    "OpenSpiel's text of what you see ('observation') and, in games with hidden "
    "information, of everything you have seen so far ('information_state'). Each legal "
    'action is an object {"id": <OpenSpiel action number>, "text": <its name>}; answer '
    "with one of them exactly as listed. Chance events (cards, dice) are drawn by the "
    "referee. The player with the higher return at the end wins the match; equal returns "
    "are a draw. With more than two players the returns rank the players, equal returns "
    "sharing a rank."
)


@dataclasses.dataclass(frozen=True)
class OpenSpielInfo(EnvironmentInfo):
    """The limits and texts of an OpenSpiel game: its defaults from ``games.yml`` (the
    database row an organizer creates may override the limits)."""

    #: OpenSpiel's short name of the game.
    game: str = ""

    @property
    def html_class(self) -> str:
        return "openspiel"


@cache
def _games_file() -> dict[str, Any]:
    raw = yaml.safe_load(GAMES_FILE.read_text()) or {}
    if not isinstance(raw, dict) or set(raw) != {"defaults", "games"}:
        raise InvalidEnvironmentInfo(f"{GAMES_FILE}: expected the keys defaults and games")
    return raw


def canonical_spec(spec: str, *, players: int | None = None) -> str:
    """The spec written one way (``GameSpec.canonical``), once checked that Arena can play
    its game; UnknownGame or InvalidSpec otherwise. ``players``: the seats an organizer
    chose, set through the game's own parameter for its count (``with_players``)."""
    parsed = parse_spec(spec)
    if players is not None:
        parsed = with_players(parsed, players)
    load_new_game(parsed)
    return parsed.canonical


def _first_seat(game: pyspiel.Game) -> int | None:
    """Who moves first: the first position's player (White's seat in chess, for one);
    None when a chance event comes first (backgammon's dice decide, poker deals) or all
    move at once."""
    player = game.new_initial_state().current_player()
    return player if player >= 0 else None


@cache
def load_spec_class(spec: str) -> type[OpenSpielEnvironment]:
    """A subclass of the adapter for the spec's game (one per spec, kept)."""
    parsed = parse_spec(spec)
    game = load_game(parsed)
    attributes = {
        "name": parsed.canonical,
        "game": game,
        "short_name": parsed.game,
        "parameters": parsed.parameter_dict,
        "num_players": game.num_players(),
        "simultaneous": game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS,
        "first_seat": _first_seat(game),
        "__module__": __name__,
    }
    class_name = "OpenSpiel_" + "".join(part.title() for part in parsed.game.split("_"))
    return type(class_name, (OpenSpielEnvironment,), attributes)


@cache
def load_spec_info(spec: str) -> OpenSpielInfo:
    parsed = parse_spec(spec)
    game = load_game(parsed)
    games = _games_file()
    entry = dict(games["games"].get(parsed.game) or {})
    values = {
        **info_values(games["defaults"], f"{GAMES_FILE} (defaults)", required=()),
        **info_values(entry, f"{GAMES_FILE} ({parsed.game})", required=()),
    }
    long_name = game.get_type().long_name
    title = values.pop("title", long_name)
    if parsed.parameters:
        title += (
            " (" + ", ".join(f"{key}={written(value)}" for key, value in parsed.parameters) + ")"
        )
    values["title"] = title
    values.setdefault(
        "description", f"{long_name}, from OpenSpiel's game library ({parsed.canonical})."
    )
    rules = values.pop("rules", f"The rules of OpenSpiel's {long_name} ({parsed.game}).")
    values["rules"] = f"{rules.strip()}\n\n{PLAYING_HERE}"
    values["players"] = game.num_players()
    return OpenSpielInfo(
        name=parsed.canonical, static_dir=FOLDER / "static", game=parsed.game, **values
    )
