"""What an environment is to the platform: the contents of its ``info.yml`` (or of an
OpenSpiel game's defaults), type-checked, and the errors of finding or reading one.
``environments.registry`` finds games by name; ``environments.openspiel`` makes them
from a spec; both read their limits through ``info_values``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The prefix of an OpenSpiel game spec (``environments.openspiel``).
SPEC_PREFIX = "openspiel:"


class UnknownEnvironment(LookupError):
    pass


class InvalidEnvironmentInfo(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class EnvironmentInfo:
    """The contents of one ``info.yml``; times are seconds, memory is MiB."""

    name: str
    title: str
    description: str
    rules: str
    players: int
    matches_per_duel: int
    validation_matches: int
    move_time: float
    time_bank: float
    startup_time: float
    memory_mb: int
    cpu_seconds: int
    static_dir: Path
    #: Matches in each duel of a continuous ladder: few, so that matchmaking chooses often
    #: (2 by default: one with each player first).
    ladder_matches_per_duel: int = 2
    #: The clock of a duel with an LLM seat, for every seat of it: a language model behind
    #: a server takes seconds per answer, not milliseconds (``referee.duel_settings.llm_clock``).
    llm_move_time: float = 60.0
    llm_time_bank: float = 300.0
    #: The Gymnasium id of a one-player game (``CartPole-v1``); empty for Arena's own games.
    gymnasium: str = ""
    #: Keyword arguments of ``gymnasium.make``, as sorted (key, value) pairs.
    gymnasium_options: tuple[tuple[str, Any], ...] = ()
    #: A one-player game's score for an episode ended by the agent's fault: the worst
    #: return the environment can give (0 for CartPole, -500 for Acrobot).
    fault_return: float = 0.0
    #: Random legal moves the referee plays at the start of each match before the agents
    #: take over (``referee.openings``), so that deterministic agents do not replay one
    #: match: 0 in a game with chance (a deal, dice), whose seed varies the matches already.
    opening_moves: int = 0

    @property
    def html_class(self) -> str:
        """The prefix of the class names in the game's HTML and stylesheet."""
        return self.name.replace("_", "-")


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "title": str,
    "description": str,
    "rules": str,
    "players": int,
    "matches_per_duel": int,
    "validation_matches": int,
    "move_time": (int, float),
    "time_bank": (int, float),
    "startup_time": (int, float),
    "memory_mb": int,
    "cpu_seconds": int,
}
#: Keys that may be left out (EnvironmentInfo has their defaults).
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "ladder_matches_per_duel": int,
    "llm_move_time": (int, float),
    "llm_time_bank": (int, float),
}
#: Keys of Gymnasium games, checked on their own (text, a mapping, a number of any sign).
_GYMNASIUM_KEYS = ("gymnasium", "gymnasium_options", "fault_return")
#: Keys that may be 0 (a whole number, left out: 0).
_COUNTS = ("opening_moves",)


def info_values(
    raw: dict[str, Any], where: object, *, required: Iterable[str] = tuple(_REQUIRED)
) -> dict[str, Any]:
    """The fields of ``EnvironmentInfo`` in ``raw`` (read from ``where``), type-checked;
    ``required`` are the keys that must be there."""
    values: dict[str, Any] = {}
    for key, kind in _REQUIRED.items():
        if key not in raw:
            if key in required:
                raise InvalidEnvironmentInfo(f"{where}: missing {key!r}")
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise InvalidEnvironmentInfo(f"{where}: {key!r} has the wrong type: {value!r}")
        if isinstance(value, int | float) and value <= 0:
            raise InvalidEnvironmentInfo(f"{where}: {key!r} must be positive: {value!r}")
        values[key] = value
    for key, kind in _OPTIONAL.items():
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidEnvironmentInfo(
                    f"{where}: {key!r} must be a positive number: {value!r}"
                )
            if not isinstance(value, kind):
                raise InvalidEnvironmentInfo(f"{where}: {key!r} must be a whole number: {value!r}")
            values[key] = value
    for key in _COUNTS:
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidEnvironmentInfo(
                    f"{where}: {key!r} must be a whole number, 0 or more: {value!r}"
                )
            values[key] = value
    values.update(_gymnasium_values(where, raw))
    unknown = set(raw) - set(_REQUIRED) - set(_OPTIONAL) - set(_GYMNASIUM_KEYS) - set(_COUNTS)
    if unknown:
        raise InvalidEnvironmentInfo(f"{where}: unknown keys {sorted(unknown)}")
    return values


def _gymnasium_values(where: object, raw: dict[str, Any]) -> dict[str, Any]:
    if not any(key in raw for key in _GYMNASIUM_KEYS):
        return {}
    gymnasium_id = raw.get("gymnasium")
    if not isinstance(gymnasium_id, str) or not gymnasium_id.strip():
        raise InvalidEnvironmentInfo(f"{where}: 'gymnasium' must name a Gymnasium id")
    if raw["players"] != 1:
        raise InvalidEnvironmentInfo(f"{where}: a Gymnasium game has 'players: 1'")
    options = raw.get("gymnasium_options", {})
    if not isinstance(options, dict) or not all(isinstance(key, str) for key in options):
        raise InvalidEnvironmentInfo(f"{where}: 'gymnasium_options' must be a mapping")
    fault_return = raw.get("fault_return", 0.0)
    if isinstance(fault_return, bool) or not isinstance(fault_return, int | float):
        raise InvalidEnvironmentInfo(f"{where}: 'fault_return' must be a number")
    return {
        "gymnasium": gymnasium_id,
        "gymnasium_options": tuple(sorted(options.items())),
        "fault_return": float(fault_return),
    }
