"""Competitions: created and edited with their phases (a deadline extended by moving its
final phase), their teams seen with their uploads per day, a team disqualified, the final
launched by hand once mended, its held-out standings published."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.admin.base import EMPTY, ArenaAdmin, OrganizerPermissions, ReadOnlyInline, admin_link
from core.errors import ArenaError
from core.models import Competition, CompetitionPhase, Revision, Team, TeamMember
from core.services.competitions import team_uploads, uploads_per_team_and_day
from tournament_manager.services.competitions import final_launch, final_publish, team_disqualify


class PhaseInline(OrganizerPermissions, admin.TabularInline):
    model = CompetitionPhase
    extra = 0
    can_delete = True
    fields = (
        "name",
        "starts_at",
        "uploads_open",
        "daily_limit",
        "total_limit",
        "plays",
        "standings_public",
    )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A launched final's phases are history: its deadline has been.
        if obj is not None and obj.final_tournament_id is not None:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_change_permission(request, obj)


class TeamColumns:
    """A team's members and its uploads, as its list and its competition's page show them."""

    @admin.display(description="members")
    def members(self, team: Team) -> str:
        return ", ".join(str(member.user) for member in team.memberships.all()) or EMPTY

    @admin.display(description="uploads")
    def uploads(self, team: Team) -> int:
        return team_uploads(team)


class TeamInline(TeamColumns, ReadOnlyInline):
    model = Team
    fields = ("name", "members", "uploads", "disqualified_at")


@admin.register(Competition)
class CompetitionAdmin(ArenaAdmin):
    list_display = ("title", "environment", "phase_now", "deadline", "teams_count", "final")
    list_filter = ("environment",)
    search_fields = ("title", "slug")
    prepopulated_fields = {"slug": ("title",)}
    filter_horizontal = ("reference_revisions",)
    inlines = (PhaseInline, TeamInline)
    actions = ("publish_final", "launch_final")
    fieldsets = (
        (None, {"fields": ("environment", "title", "slug", "description", "is_public")}),
        ("Teams", {"fields": ("team_size_limit",)}),
        (
            "Final",
            {
                "fields": (
                    "final_submissions",
                    "final_format",
                    "final_matches_per_duel",
                    "final_rounds",
                    "final_hidden",
                    "reference_revisions",
                    "final_link",
                    "final_error",
                    "final_published_at",
                )
            },
        ),
        ("Uploads per team and day (UTC)", {"fields": ("uploads_table",)}),
    )
    readonly_fields = ("final_link", "final_error", "final_published_at", "uploads_table")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Competition]:
        return (
            super()
            .get_queryset(request)
            .select_related("environment", "final_tournament")
            .annotate(teams_count=Count("teams"))
        )

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "reference_revisions":
            kwargs["queryset"] = Revision.objects.validated().select_related(
                "competitor__environment"
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    @admin.display(description="phase now")
    def phase_now(self, competition: Competition) -> str:
        phase = competition.phase_at()
        return phase.name if phase else "not open yet"

    @admin.display(description="deadline (UTC)")
    def deadline(self, competition: Competition) -> str:
        deadline = competition.deadline
        return f"{deadline:%Y-%m-%d %H:%M}" if deadline else EMPTY

    @admin.display(description="teams", ordering="teams_count")
    def teams_count(self, competition: Competition) -> int:
        return getattr(competition, "teams_count", 0)

    @admin.display(description="final")
    def final(self, competition: Competition) -> str:
        if competition.final_error:
            return "could not start"
        final = competition.final_tournament
        if final is None:
            return "at the deadline"
        state = final.get_status_display().lower()
        if competition.is_published:
            return f"{state}, published"
        return f"{state}, held out" if competition.final_hidden else state

    @admin.display(description="final tournament")
    def final_link(self, competition: Competition) -> str:
        return admin_link(competition.final_tournament)

    @admin.display(description="uploads")
    def uploads_table(self, competition: Competition) -> str:
        rows = uploads_per_team_and_day(competition)
        if not rows:
            return EMPTY
        return format_html(
            "<table><tr><th>day</th><th>team</th><th>uploads</th></tr>{}</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                ((row.day.isoformat(), row.team, row.uploads) for row in rows),
            ),
        )

    def save_model(self, request: HttpRequest, obj: Competition, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)

    @admin.action(description="Publish the final's standings")
    def publish_final(self, request: HttpRequest, queryset: QuerySet[Competition]) -> None:
        self.run_each(
            request,
            queryset,
            lambda competition: None if final_publish(competition=competition) else "already",
            done="Published",
        )

    @admin.action(description="Launch the final now (after its deadline; once mended)")
    def launch_final(self, request: HttpRequest, queryset: QuerySet[Competition]) -> None:
        def launch(competition: Competition) -> str | None:
            if competition.deadline is None or competition.phase_at() != competition.final_phase:
                raise ArenaError("its final phase has not started: the final starts with it")
            Competition.objects.filter(pk=competition.pk).update(final_error="")
            if final_launch(competition=competition) is None:
                competition.refresh_from_db()
                raise ArenaError(competition.final_error or "its final is launched already")
            return None

        self.run_each(request, queryset, launch, done="Launched")


class MemberInline(OrganizerPermissions, admin.TabularInline):
    model = TeamMember
    extra = 0
    fields = ("user", "joined_at")
    readonly_fields = ("joined_at",)
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(TeamColumns, ArenaAdmin):
    list_display = ("name", "competition", "members", "uploads", "disqualified_at")
    list_filter = ("competition",)
    search_fields = ("name", "memberships__user__email")
    inlines = (MemberInline,)
    actions = ("disqualify",)
    fields = ("competition", "name", "disqualified_reason", "disqualified_at")
    readonly_fields = ("disqualified_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return super().get_queryset(request).select_related("competition")

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # A member added here belongs to the team's competition (the one-team rule).
        for member in formset.save(commit=False):
            member.competition_id = form.instance.competition_id
            member.save()
        for gone in formset.deleted_objects:
            gone.delete()

    @admin.action(description="Disqualify the selected teams (their agents are disabled)")
    def disqualify(self, request: HttpRequest, queryset: QuerySet[Team]) -> None:
        self.run_each(
            request,
            queryset,
            lambda team: team_disqualify(
                team=team, reason=team.disqualified_reason or "by the organizers"
            ),
            done="Disqualified",
        )
