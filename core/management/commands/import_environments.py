from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.errors import ArenaError
from core.models import Environment
from core.services.environments import environments_import
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, load_info


class Command(BaseCommand):
    help = "Create or update an Environment row for every game folder's info.yml."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            environments = environments_import()
        except InvalidEnvironmentInfo as error:
            raise CommandError(f"cannot import: {error}") from error
        except ArenaError as error:
            raise CommandError(f"cannot import: {error.message}") from error
        for environment in environments:
            state = "open" if environment.is_active else "closed to uploads"
            self.stdout.write(
                f"{environment.name:<22} {environment.title} ({state}): "
                f"{environment.players} players, {environment.matches_per_duel} matches a duel, "
                f"{environment.move_time:g} s a move, {environment.memory_mb} MiB"
            )
        self.stdout.write(self.style.SUCCESS(f"Imported {len(environments)} environment(s)."))
        self._check_openspiel_games()

    def _check_openspiel_games(self) -> None:
        """The OpenSpiel games added in the admin are left as they are; each is checked to
        load still (an upgrade of open_spiel may drop a game or a parameter)."""
        for environment in Environment.objects.exclude(spec="").order_by("name"):
            try:
                load_info(environment.spec)
            except (UnknownEnvironment, InvalidEnvironmentInfo) as error:
                self.stdout.write(
                    self.style.ERROR(f"{environment.name:<22} no longer loads: {error}")
                )
            else:
                self.stdout.write(
                    f"{environment.name:<22} {environment.spec} (OpenSpiel, added in the admin)"
                )
