"""What commands share to read their input: confirmation prompts, names looked up."""

from __future__ import annotations

from django.core.management.base import CommandError

from core.models import Environment


def confirm(question: str, *, assume_yes: bool) -> None:
    """Return if the operator types "yes" (or passed --yes); otherwise stop the command.

    With no terminal to ask (stdin closed), the answer is no.
    """
    if assume_yes:
        return
    try:
        answer = input(f"{question}\nType 'yes' to continue: ")
    except EOFError:
        answer = ""
    if answer.strip().lower() != "yes":
        raise CommandError("aborted: nothing was changed (pass --yes to skip this question)")


def environment_named(name: str) -> Environment:
    try:
        return Environment.objects.get(name=name)
    except Environment.DoesNotExist:
        known = ", ".join(Environment.objects.values_list("name", flat=True)) or "none imported"
        raise CommandError(
            f"no environment named {name!r} (known: {known}; import them with "
            "manage.py import_environments)"
        ) from None
