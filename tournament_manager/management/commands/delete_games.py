from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from core.management.arguments import confirm, environment_named
from core.models import Duel, Match, Tournament, TournamentStatus


class Command(BaseCommand):
    help = (
        "Delete played games: tournaments with their duels and matches, of one environment "
        "or all; competitors and revisions stay. Validation (self-play) duels too with "
        "--validation. Ratings stay (reset them with reset_ratings). Asks first unless --yes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--environment", metavar="NAME", help="only this environment")
        scope.add_argument("--all", action="store_true", help="every environment")
        parser.add_argument(
            "--validation", action="store_true", help="also delete validation duels"
        )
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, *args: Any, **options: Any) -> None:
        tournaments = Tournament.objects.all()
        duels = Duel.objects.all()
        where = "in every environment"
        if options["environment"]:
            environment = environment_named(options["environment"])
            tournaments = tournaments.filter(environment=environment)
            duels = duels.filter(environment=environment)
            where = f"in {environment.name}"
        if not options["validation"]:
            duels = duels.filter(is_validation=False)
        counts = {
            "tournaments": tournaments.count(),
            "duels": duels.count(),
            "matches": Match.objects.filter(duel__in=duels).count(),
        }
        summary = ", ".join(f"{count} {name}" for name, count in counts.items())
        if not any(counts.values()):
            self.stdout.write(f"Nothing to delete {where}.")
            return
        running = tournaments.filter(status=TournamentStatus.RUNNING).count()
        question = f"Delete {summary} {where}? Competitors and revisions are kept."
        if running:
            question += f" {running} tournament(s) are still running."
        confirm(question, assume_yes=options["yes"])
        with transaction.atomic():
            # Matches go with their duels, participants with their tournaments.
            duels.delete()
            tournaments.delete()
        self.stdout.write(self.style.SUCCESS(f"Deleted {summary} {where}."))
        self.stdout.write("Ratings are unchanged; reset them with: manage.py reset_ratings")
