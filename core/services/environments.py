"""Environments: the built-in games imported from their folders, and OpenSpiel games an
organizer adds."""

from __future__ import annotations

import re
from collections.abc import Mapping

from django.db import IntegrityError
from django.db.models import Q

from core.errors import ArenaError
from core.models import (
    Environment,
)


def environments_import() -> list[Environment]:
    """Create or update an Environment row for every game folder's ``info.yml`` (the
    OpenSpiel games an organizer added are left as they are)."""
    from environments.registry import environment_names, load_info

    imported = []
    for name in environment_names():
        info = load_info(name)
        if Environment.objects.filter(name=name).exclude(spec="").exists():
            raise ArenaError(
                f"The OpenSpiel environment {name!r} has the name of the built-in game "
                f"environments/{name}: give it another name in the admin, then import again."
            )
        environment, _ = Environment.objects.update_or_create(
            name=name,
            defaults={
                "title": info.title,
                "description": info.description,
                "rules": info.rules,
                "players": info.players,
                "matches_per_duel": info.matches_per_duel,
                "ladder_matches_per_duel": info.ladder_matches_per_duel,
                "validation_matches": info.validation_matches,
                "move_time": info.move_time,
                "time_bank": info.time_bank,
                "startup_time": info.startup_time,
                "memory_mb": info.memory_mb,
                "cpu_seconds": info.cpu_seconds,
            },
        )
        imported.append(environment)
    return imported


#: The limits an organizer may set for an OpenSpiel game (the defaults are ``games.yml``'s).
OPENSPIEL_LIMITS = (
    "matches_per_duel",
    "ladder_matches_per_duel",
    "validation_matches",
    "move_time",
    "time_bank",
    "startup_time",
    "memory_mb",
    "cpu_seconds",
)


def openspiel_slug(spec: str) -> str:
    """A default environment name for a spec: ``openspiel:go(board_size=9)`` gives
    ``go_board_size_9``."""
    body = spec.removeprefix("openspiel:")
    return re.sub(r"[^a-z0-9]+", "_", body.lower()).strip("_")[:64]


def environment_openspiel_values(
    *,
    spec: str,
    name: str = "",
    title: str = "",
    limits: Mapping[str, float | int | None] | None = None,
    players: int | None = None,
) -> dict[str, object]:
    """The fields of a new OpenSpiel game's environment: its spec written one way, its
    texts, and its default limits (``environments/openspiel/games.yml``) where ``limits``
    gives none. ``players``: the seats the organizer chose (None: the spec's count), set in
    the spec through the game's own parameter (``openspiel:kuhn_poker(players=3)``).

    ArenaError when the spec does not load (unknown game, bad parameter, a game Arena
    cannot play, a count of players Arena or the game does not allow), or the game or the
    name is already there.
    """
    from environments.openspiel import canonical_spec
    from environments.registry import (
        InvalidEnvironmentInfo,
        UnknownEnvironment,
        environment_names,
        load_info,
    )

    try:
        spec = canonical_spec(spec.strip(), players=players)
        info = load_info(spec)
    except (UnknownEnvironment, InvalidEnvironmentInfo) as error:
        raise ArenaError(str(error)) from None
    name = name or openspiel_slug(spec)
    if name in environment_names():
        raise ArenaError(f"{name!r} is the name of a built-in game: choose another name.")
    existing = Environment.objects.filter(Q(name=name) | Q(spec=spec)).first()
    if existing is not None:
        what = "game" if existing.spec == spec else "name"
        raise ArenaError(
            f"The {what} is already an environment: {existing.name} "
            f"({existing.spec or 'built in'})."
        )
    values: dict[str, object] = {key: getattr(info, key) for key in OPENSPIEL_LIMITS}
    values.update({key: value for key, value in (limits or {}).items() if value is not None})
    return {
        "name": name,
        "spec": spec,
        "title": title or info.title,
        "description": info.description,
        "rules": info.rules,
        "players": info.players,
        **values,
    }


def environment_add_openspiel(
    *,
    spec: str,
    name: str = "",
    title: str = "",
    limits: Mapping[str, float | int | None] | None = None,
    players: int | None = None,
) -> Environment:
    """Create the environment of an OpenSpiel game (``environment_openspiel_values``)."""
    values = environment_openspiel_values(
        spec=spec, name=name, title=title, limits=limits, players=players
    )
    try:
        return Environment.objects.create(**values)
    except IntegrityError:
        raise ArenaError(f"The name {values['name']!r} or the game was just taken.") from None
