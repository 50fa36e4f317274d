from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.services import environments_import
from environments.registry import InvalidEnvironmentInfo


class Command(BaseCommand):
    help = "Create or update an Environment row for every game folder's info.yml."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            environments = environments_import()
        except InvalidEnvironmentInfo as error:
            raise CommandError(f"cannot import: {error}") from error
        for environment in environments:
            state = "open" if environment.is_active else "closed to uploads"
            self.stdout.write(
                f"{environment.name:<22} {environment.title} ({state}): "
                f"{environment.players} players, {environment.matches_per_duel} matches a duel, "
                f"{environment.move_time:g} s a move, {environment.memory_mb} MiB"
            )
        self.stdout.write(self.style.SUCCESS(f"Imported {len(environments)} environment(s)."))
