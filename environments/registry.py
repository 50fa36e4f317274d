"""Finding games by name and reading their ``info.yml``.

Each built-in game lives in ``environments/<name>/`` with ``environment.py`` (one
``Environment`` subclass), ``info.yml`` and ``static/``. The files are the source
of truth for its limits; the database keeps a copy for browsing.

A one-player Gymnasium game is a folder with only ``info.yml``: its ``gymnasium`` key
names the Gymnasium id, and the class comes from ``environments.gymnasium_game``.

A name that starts with ``openspiel:`` is an OpenSpiel game spec instead, such as
``openspiel:go(board_size=9)`` (``environments.openspiel``): its class is made from
the spec and its limits are per-game defaults, which the organizer may override in
the database row the admin creates for it.
"""

from __future__ import annotations

import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import yaml

from environments.base import Environment

# Where every game's information and errors are defined; imported from here by most.
from environments.info import (
    SPEC_PREFIX,
    EnvironmentInfo,
    InvalidEnvironmentInfo,
    UnknownEnvironment,
    info_values,
)

__all__ = [
    "ENVIRONMENTS_DIR",
    "SPEC_PREFIX",
    "EnvironmentInfo",
    "InvalidEnvironmentInfo",
    "UnknownEnvironment",
    "environment_names",
    "info_values",
    "is_spec",
    "load_environment_class",
    "load_info",
    "make_environment",
]

ENVIRONMENTS_DIR = Path(__file__).resolve().parent
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def environment_names() -> list[str]:
    return sorted(
        path.parent.name
        for path in ENVIRONMENTS_DIR.glob("*/info.yml")
        if _NAME.match(path.parent.name)
    )


def is_spec(name: str) -> bool:
    """Whether ``name`` names an OpenSpiel game rather than a folder of ``environments/``."""
    return name.startswith(SPEC_PREFIX)


def _check_name(name: str) -> None:
    if not _NAME.match(name) or not (ENVIRONMENTS_DIR / name / "info.yml").is_file():
        known = ", ".join(environment_names())
        raise UnknownEnvironment(f"unknown environment {name!r}; known: {known}")


@cache
def load_info(name: str) -> EnvironmentInfo:
    if is_spec(name):
        # Imported only for a spec: OpenSpiel costs 40 ms and its memory to load.
        from environments.openspiel import load_spec_info

        return load_spec_info(name)
    _check_name(name)
    path = ENVIRONMENTS_DIR / name / "info.yml"
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict):
        raise InvalidEnvironmentInfo(f"{path}: expected a mapping at the top level")
    return EnvironmentInfo(name=name, static_dir=path.parent / "static", **info_values(raw, path))


@cache
def load_environment_class(name: str) -> type[Environment]:
    if is_spec(name):
        from environments.openspiel import load_spec_class

        return load_spec_class(name)
    _check_name(name)
    info = load_info(name)
    if info.gymnasium:
        # Imported here: Gymnasium (and NumPy) only where a Gymnasium game is played.
        from environments.gymnasium_game import gymnasium_environment_class

        return gymnasium_environment_class(name, info.gymnasium, dict(info.gymnasium_options))
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
    (3 to 6 players, say), and must otherwise be the game's own count (an OpenSpiel game's
    is its spec's: ``openspiel:kuhn_poker(players=3)``)."""
    cls = load_environment_class(name)
    environment = cls()
    if players is None or players == environment.num_players:
        return environment
    if is_spec(name):
        # An OpenSpiel game's count is in its spec, so that one spec is one game.
        # Written without loading it (a new spec's first load is a process of its own).
        from environments.openspiel import InvalidSpec, parse_spec, with_players

        try:
            hint = f"its spec for {players} is {with_players(parse_spec(name), players).canonical}"
        except InvalidSpec as error:
            hint = str(error)
        raise ValueError(
            f"{name} is a game for {environment.num_players} players, not {players} ({hint})"
        )
    if "players" not in cls.default_configuration():
        raise ValueError(f"{name} is a game for {environment.num_players} players, not {players}")
    return cls({"players": players})
