from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.management.arguments import confirm, environment_named
from core.models import Environment, Rating
from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA
from tournament_manager.leaderboard import leaderboard_refit
from tournament_manager.ratings import ratings_reset


class Command(BaseCommand):
    help = (
        f"Put ratings back to mu {DEFAULT_MU:g}, sigma {DEFAULT_SIGMA:.2f} (each reset is "
        "logged as a rating change with reason 'reset'); the published leaderboard then "
        "counts only the matches played after it. Asks first unless --yes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--environment", metavar="NAME", help="only this environment")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, *args: Any, **options: Any) -> None:
        ratings = Rating.objects.all()
        environment = None
        where = "in every environment"
        if options["environment"]:
            environment = environment_named(options["environment"])
            ratings = ratings.filter(competitor__environment=environment)
            where = f"in {environment.name}"
        count = ratings.count()
        if not count:
            self.stdout.write(f"No ratings {where}; nothing to reset.")
            return
        confirm(
            f"Reset {count} rating(s) {where} to mu {DEFAULT_MU:g}, sigma {DEFAULT_SIGMA:.2f}?",
            assume_yes=options["yes"],
        )
        reset = ratings_reset(environment_id=environment.pk if environment else None)
        for refitted in [environment] if environment else Environment.objects.all():
            leaderboard_refit(environment=refitted)
        self.stdout.write(self.style.SUCCESS(f"Reset {reset} rating(s) {where}."))
