"""Finding games by name and reading their ``info.yml``.

Each game lives in ``environments/<name>/`` with ``environment.py`` (one
``Environment`` subclass), ``info.yml`` and ``static/``. The files are the source
of truth for limits; the database keeps a copy for browsing (later issues).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from environments.base import Environment

ENVIRONMENTS_DIR = Path(__file__).resolve().parent
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


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
    #: a server takes seconds per answer, not milliseconds (``referee.duel.llm_clock``).
    llm_move_time: float = 60.0
    llm_time_bank: float = 300.0

    @property
    def html_class(self) -> str:
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


def environment_names() -> list[str]:
    return sorted(
        path.parent.name
        for path in ENVIRONMENTS_DIR.glob("*/info.yml")
        if _NAME.match(path.parent.name)
    )


def _check_name(name: str) -> None:
    if not _NAME.match(name) or not (ENVIRONMENTS_DIR / name / "info.yml").is_file():
        known = ", ".join(environment_names())
        raise UnknownEnvironment(f"unknown environment {name!r}; known: {known}")


@cache
def load_info(name: str) -> EnvironmentInfo:
    _check_name(name)
    path = ENVIRONMENTS_DIR / name / "info.yml"
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict):
        raise InvalidEnvironmentInfo(f"{path}: expected a mapping at the top level")
    values: dict[str, Any] = {}
    for key, kind in _REQUIRED.items():
        if key not in raw:
            raise InvalidEnvironmentInfo(f"{path}: missing {key!r}")
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise InvalidEnvironmentInfo(f"{path}: {key!r} has the wrong type: {value!r}")
        if isinstance(value, int | float) and value <= 0:
            raise InvalidEnvironmentInfo(f"{path}: {key!r} must be positive: {value!r}")
        values[key] = value
    for key, kind in _OPTIONAL.items():
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidEnvironmentInfo(
                    f"{path}: {key!r} must be a positive number: {value!r}"
                )
            if not isinstance(value, kind):
                raise InvalidEnvironmentInfo(f"{path}: {key!r} must be a whole number: {value!r}")
            values[key] = value
    unknown = set(raw) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise InvalidEnvironmentInfo(f"{path}: unknown keys {sorted(unknown)}")
    return EnvironmentInfo(name=name, static_dir=path.parent / "static", **values)


@cache
def load_environment_class(name: str) -> type[Environment]:
    _check_name(name)
    module = importlib.import_module(f"environments.{name}.environment")
    classes = [
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, Environment)
        and value is not Environment
        and value.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise InvalidEnvironmentInfo(
            f"environments/{name}/environment.py must define exactly one Environment"
        )
    return classes[0]


def make_environment(name: str, *, players: int | None = None) -> Environment:
    """A new game; ``players`` sets its seat count when the game has a ``players`` setting
    (3 to 6 players, say), and must otherwise be the game's own count."""
    cls = load_environment_class(name)
    environment = cls()
    if players is None or players == environment.num_players:
        return environment
    if "players" not in cls.default_configuration():
        raise ValueError(f"{name} is a game for {environment.num_players} players, not {players}")
    return cls({"players": players})
