from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.models import Role, User
from core.services.accounts import user_create

#: (e-mail, display name, role, password): known passwords, for demos and trials only.
DEMO_USERS = (
    ("organizer@example.com", "Olivia Organizer", Role.ORGANIZER, "organizer-arena-demo"),
    ("alice@example.com", "Alice", Role.ATTENDEE, "alice-arena-demo"),
    ("bob@example.com", "Bob", Role.ATTENDEE, "bob-arena-demo"),
    ("carol@example.com", "Carol", Role.ATTENDEE, "carol-arena-demo"),
)


class Command(BaseCommand):
    help = (
        "Create an organizer and three attendees with known passwords (printed), for demos. "
        "Existing accounts are left as they are."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="create them even with ARENA_DEBUG off (known passwords on a real site!)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "ARENA_DEBUG is off: this looks like a real site, and these accounts have "
                "published passwords; pass --force if you really want them"
            )
        for email, display_name, role, password in DEMO_USERS:
            if User.objects.filter(email=email).exists():
                self.stdout.write(f"{email:<24} exists, left unchanged")
                continue
            user_create(email=email, display_name=display_name, role=role, password=password)
            self.stdout.write(f"{email:<24} created ({role}), password: {password}")
