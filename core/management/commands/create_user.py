from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ArenaError
from core.models import Role
from core.services.accounts import (
    display_name_check,
    email_check,
    password_check,
    random_password,
    role_check,
    user_create,
)


class Command(BaseCommand):
    help = (
        "Create one account. Asks for what is missing (password twice, hidden) unless "
        "--no-input; then a missing password is generated and printed once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email")
        parser.add_argument("--display-name")
        parser.add_argument("--role", choices=Role.values, help="default: attendee")
        parser.add_argument("--team", default=None)
        parser.add_argument(
            "--password", help="visible in the shell history: prefer the prompt or a random one"
        )
        parser.add_argument(
            "--no-input", action="store_true", help="never prompt; fail on a missing value"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        interactive = not options["no_input"]
        email = options["email"]
        display_name = options["display_name"]
        role = options["role"]
        team = options["team"]
        password = options["password"]
        generated = False
        if not interactive:
            if not email or not display_name:
                raise CommandError("--email and --display-name are required with --no-input")
            if password is None:
                password, generated = random_password(), True
        else:
            email = email or self._ask("E-mail: ", email_check)
            display_name = display_name or self._ask("Display name: ", display_name_check)
            role = role or self._ask(f"Role ({' or '.join(Role.values)}) [attendee]: ", role_check)
            if team is None:
                team = input("Team (optional): ").strip()
            if password is None:
                password = self._ask_password(email, display_name)
        try:
            user = user_create(
                email=email,
                display_name=display_name,
                role=role or Role.ATTENDEE,
                team=team or "",
                password=password,
            )
        except ArenaError as error:
            raise CommandError(error.message) from error
        self.stdout.write(
            self.style.SUCCESS(f"Created {user.role} {user.email} ({user.display_name}).")
        )
        if generated:
            self.stdout.write(f"Password (shown once): {password}")

    def _ask(self, prompt: str, check: Callable[[str], str]) -> str:
        while True:
            try:
                return check(input(prompt))
            except ArenaError as error:
                self.stderr.write(f"Error: {error.message}")
            except EOFError:
                raise CommandError("no answer (stdin closed); use --no-input and flags") from None

    def _ask_password(self, email: str, display_name: str) -> str:
        while True:
            try:
                password = getpass.getpass("Password: ")
                again = getpass.getpass("Password (again): ")
            except EOFError:
                raise CommandError("no answer (stdin closed); use --no-input and flags") from None
            if password != again:
                self.stderr.write("Error: the two passwords differ.")
                continue
            try:
                password_check(password, email=email, display_name=display_name)
            except ArenaError as error:
                self.stderr.write(f"Error: {error.message}")
                continue
            return password
