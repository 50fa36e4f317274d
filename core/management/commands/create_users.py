from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ArenaError
from core.models import Role, User
from core.services.accounts import random_password, user_create

REQUIRED_COLUMNS = {"email", "display_name"}
KNOWN_COLUMNS = REQUIRED_COLUMNS | {"role", "team", "password"}


class Command(BaseCommand):
    help = (
        "Create accounts from a CSV file with a header row: email, display_name, and "
        "optionally role (attendee or organizer), team, password (random if empty, printed "
        "once). Existing e-mail addresses are skipped; a bad row creates nothing and is "
        "reported, the others go on. Exits non-zero if any row failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", required=True, type=Path, help="the CSV file")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {path}: {error}") from error
        reader = csv.DictReader(text.splitlines())
        columns = {name.strip().lower() for name in reader.fieldnames or []}
        missing = REQUIRED_COLUMNS - columns
        if missing:
            raise CommandError(
                f"{path}: the header row lacks {', '.join(sorted(missing))} "
                f"(columns: {', '.join(sorted(KNOWN_COLUMNS))})"
            )
        unknown = columns - KNOWN_COLUMNS
        if unknown:
            self.stderr.write(f"Ignoring unknown column(s): {', '.join(sorted(unknown))}")

        counts = {"created": 0, "skipped": 0, "error": 0}
        for line, raw in enumerate(reader, start=2):
            row = {(key or "").strip().lower(): (value or "").strip() for key, value in raw.items()}
            email = row.get("email", "")
            if not any(row.values()):
                continue
            if email and User.objects.filter(email__iexact=email).exists():
                counts["skipped"] += 1
                self.stdout.write(f"line {line}: {email} skipped (already has an account)")
                continue
            password = row.get("password") or random_password()
            try:
                user = user_create(
                    email=email,
                    display_name=row.get("display_name", ""),
                    role=row.get("role") or Role.ATTENDEE,
                    team=row.get("team", ""),
                    password=password,
                )
            except ArenaError as error:
                counts["error"] += 1
                self.stderr.write(f"line {line}: {email or '(no e-mail)'} error: {error.message}")
                continue
            counts["created"] += 1
            shown = "" if row.get("password") else f" password: {password}"
            self.stdout.write(f"line {line}: {user.email} created ({user.role}){shown}")

        self.stdout.write(
            f"{counts['created']} created, {counts['skipped']} skipped, {counts['error']} error(s)."
        )
        if counts["error"]:
            raise CommandError(
                f"{counts['error']} row(s) were not created; fix them and run the file again "
                "(accounts already created are skipped)"
            )
