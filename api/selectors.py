"""The API's lists: what the visitor may see (``reads.access``'s rules, as filters), in a
stable order for pagination, with what the schemas read joined in."""

from __future__ import annotations

from django.db.models import Count, Max, QuerySet

from core.models import (
    Competitor,
    Duel,
    Match,
    RatingChange,
    Revision,
    Tournament,
    User,
)
from core.models.submissions import managers
from reads.access import Visitor, competitors_visible, duels_visible
from reads.competitors import rating_changes
from reads.pages import visible_tournaments

_COMPETITOR = ("competitor__environment", "competitor__owner")


def competitors_for(*, user: Visitor, owned_only: bool = False) -> QuerySet[Competitor]:
    competitors = Competitor.objects.listed().filter(competitors_visible(user))
    if owned_only:
        competitors = (
            competitors.filter(managers(user)) if isinstance(user, User) else competitors.none()
        )
    return competitors.select_related("environment", "owner", "rating").order_by(
        "environment__name", "name"
    )


def competitor_with_summary(competitor: Competitor) -> Competitor:
    """The competitor again, with ``revision_count``, ``latest_version`` and its place on
    the leaderboard joined in."""
    return (
        Competitor.objects.select_related(
            "environment", "owner", "rating", "leaderboard_entry__revision"
        )
        .annotate(revision_count=Count("revisions"), latest_version=Max("revisions__version"))
        .get(pk=competitor.pk)
    )


def revisions_of(competitor: Competitor) -> QuerySet[Revision]:
    return (
        competitor.revisions.select_related(*_COMPETITOR)
        .prefetch_related("jobs")
        .order_by("-version")
    )


def submissions_of(user: User) -> QuerySet[Revision]:
    """Every revision of the user's competitors (and their teams'), newest first."""
    return (
        Revision.objects.filter(managers(user, "competitor"))
        .select_related(*_COMPETITOR)
        .prefetch_related("jobs")
        .order_by("-created_at", "-pk")
    )


def tournaments_for(*, user: Visitor) -> QuerySet[Tournament]:
    return visible_tournaments(user).order_by("-created_at", "-pk")


def duels_for(*, user: Visitor) -> QuerySet[Duel]:
    return (
        Duel.objects.filter(duels_visible(user))
        .with_seats()
        .select_related("tournament", "job")
        .order_by("-created_at", "-pk")
    )


def matches_of(duel: Duel) -> QuerySet[Match]:
    # Through the duel's manager, each match's ``duel`` is this very object: no query.
    return duel.matches.order_by("index")


def rating_changes_of(competitor: Competitor) -> QuerySet[RatingChange]:
    return rating_changes(competitor).select_related("match")
