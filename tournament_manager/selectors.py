"""Reads about tournaments that are more than a one-line query."""

from __future__ import annotations

from core.models import Environment, Revision


def latest_validated_revisions(environment: Environment) -> list[Revision]:
    """Each competitor's newest validated revision in ``environment``: who may enter."""
    latest: dict[int, Revision] = {}
    revisions = (
        Revision.objects.validated()
        .filter(competitor__environment=environment)
        .select_related("competitor__owner")
        .order_by("competitor__name", "-version")
    )
    for revision in revisions:
        latest.setdefault(revision.competitor_id, revision)
    return list(latest.values())
