"""Django in the benchmark's own process: the settings of a throwaway site, and the setup
that every benchmark which calls the platform's code directly does first."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def site_environment(folder: Path) -> dict[str, str]:
    """The settings of a throwaway site in this process: its SQLite database, media and
    builds in ``folder``, its tasks run at once, eagerly (no broker or worker to wait for)."""
    return {
        "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
        "ARENA_MEDIA_ROOT": str(folder / "media"),
        "ARENA_BUILD_ROOT": str(folder / "builds"),
        "ARENA_BROKER_URL": "eager",
    }


def django_setup(environment: Mapping[str, str]) -> None:
    """Django in this process on ``core.settings`` and ``environment`` (settings by their
    variables), its database migrated. Once a process: Django reads its settings once."""
    os.environ.update({"DJANGO_SETTINGS_MODULE": "core.settings", **environment})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
