"""The published leaderboards, the openskill ratings (a per-match estimate that steers
nothing: the API's rating history) and every logged change."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import F, QuerySet
from django.http import HttpRequest

from core.admin.base import EMPTY, ReadOnlyAdmin, admin_changelist_link, admin_link
from core.models import LeaderboardEntry, Rating, RatingChange


@admin.register(Rating)
class RatingAdmin(ReadOnlyAdmin):
    fields = (
        "competitor_link",
        "environment",
        "conservative_rating",
        "mu_shown",
        "sigma_shown",
        "games",
        "changes",
    )
    list_display = (*fields, "updated_at")
    list_filter = ("competitor__environment",)
    search_fields = ("competitor__name", "competitor__owner__email")
    list_select_related = ("competitor__environment",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rating]:
        # Not super(): its ordering would come before the annotation it orders by.
        return Rating.objects.leaderboard()

    def get_ordering(self, request: HttpRequest) -> tuple[str, ...]:
        return ("competitor__environment__name", "-conservative_rating", "-games")

    @admin.display(description="competitor", ordering="competitor__name")
    def competitor_link(self, rating: Rating) -> str:
        return admin_link(rating.competitor, rating.competitor.name)

    @admin.display(description="environment", ordering="competitor__environment__name")
    def environment(self, rating: Rating) -> str:
        return rating.competitor.environment.title

    @admin.display(description="mu - 3 sigma", ordering="conservative_rating")
    def conservative_rating(self, rating: Rating) -> str:
        return f"{rating.conservative:.2f}"

    @admin.display(description="mu", ordering="mu")
    def mu_shown(self, rating: Rating) -> str:
        return f"{rating.mu:.2f}"

    @admin.display(description="sigma", ordering="sigma")
    def sigma_shown(self, rating: Rating) -> str:
        return f"{rating.sigma:.2f}"

    @admin.display(description="log")
    def changes(self, rating: Rating) -> str:
        return admin_changelist_link(RatingChange, "changes", rating__id__exact=rating.pk)


@admin.register(RatingChange)
class RatingChangeAdmin(ReadOnlyAdmin):
    list_display = ("rating_link", "reason", "mu_change", "sigma_change", "duel_link", "created_at")
    list_filter = ("reason", "rating__competitor__environment")
    search_fields = ("rating__competitor__name",)
    list_select_related = ("rating__competitor__environment", "duel", "match")
    date_hierarchy = "created_at"
    fields = (
        "rating_link",
        "reason",
        "duel_link",
        "match_link",
        "mu_before",
        "mu_after",
        "sigma_before",
        "sigma_after",
        "created_at",
    )

    def get_ordering(self, request: HttpRequest) -> tuple[str, ...]:
        return ("-created_at", "-pk")

    @admin.display(description="competitor", ordering="rating__competitor__name")
    def rating_link(self, change: RatingChange) -> str:
        return admin_link(change.rating, change.rating.competitor)

    @admin.display(description="mu", ordering=F("mu_after") - F("mu_before"))
    def mu_change(self, change: RatingChange) -> str:
        return f"{change.mu_before:.2f} → {change.mu_after:.2f}"

    @admin.display(description="sigma")
    def sigma_change(self, change: RatingChange) -> str:
        return f"{change.sigma_before:.2f} → {change.sigma_after:.2f}"

    @admin.display(description="duel")
    def duel_link(self, change: RatingChange) -> str:
        return admin_link(change.duel, f"duel {change.duel_id}") if change.duel_id else EMPTY

    @admin.display(description="match")
    def match_link(self, change: RatingChange) -> str:
        if change.match is None:
            return EMPTY
        return admin_link(change.match, f"match {change.match.index}")


@admin.register(LeaderboardEntry)
class LeaderboardEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "place",
        "competitor_link",
        "environment",
        "score_shown",
        "could_rank",
        "matches",
        "record",
        "revision_link",
        "fitted_at",
    )
    list_filter = ("environment",)
    search_fields = ("competitor__name", "competitor__owner__email")
    list_select_related = ("environment", "competitor", "revision__competitor")
    fields = (
        "place",
        "competitor_link",
        "environment",
        "revision_link",
        "score_shown",
        "could_rank",
        "matches",
        "record",
        "fitted_at",
    )

    def get_ordering(self, request: HttpRequest) -> tuple[Any, ...]:
        return ("environment__name", F("rank").asc(nulls_last=True), "-score")

    @admin.display(description="rank", ordering="rank")
    def place(self, entry: LeaderboardEntry) -> str:
        return "provisional" if entry.rank is None else str(entry.rank)

    @admin.display(description="competitor", ordering="competitor__name")
    def competitor_link(self, entry: LeaderboardEntry) -> str:
        return admin_link(entry.competitor, entry.competitor.name)

    @admin.display(description="revision")
    def revision_link(self, entry: LeaderboardEntry) -> str:
        return admin_link(entry.revision)

    @admin.display(description="score (Elo ± sd)", ordering="score")
    def score_shown(self, entry: LeaderboardEntry) -> str:
        return f"{entry.score:.0f} ± {entry.score_sd:.0f}"

    @admin.display(description="could rank (95 %)")
    def could_rank(self, entry: LeaderboardEntry) -> str:
        if entry.rank_best == entry.rank_worst:
            return str(entry.rank_best)
        return f"{entry.rank_best}\N{EN DASH}{entry.rank_worst}"

    @admin.display(description="W-D-L")
    def record(self, entry: LeaderboardEntry) -> str:
        return f"{entry.wins}-{entry.draws}-{entry.losses}"
