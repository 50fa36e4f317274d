"""Duels (their seats, logs and matches; re-run) and matches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import Prefetch, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from core.admin.base import (
    EMPTY,
    ReadOnlyAdmin,
    ReadOnlyInline,
    admin_link,
    preformatted,
    pretty_json,
    public_link,
    status_badge,
)
from core.admin.jobs import JobColumns
from core.errors import ArenaError
from core.models import (
    Duel,
    DuelSeat,
    DuelStatus,
    Match,
)
from tournament_manager.services.settlement import duel_rerun

if TYPE_CHECKING:
    pass


class SeatInline(ReadOnlyInline):
    """Every player of a duel, seat 1 first."""

    model = DuelSeat
    verbose_name = "player"
    fields = ("number", "revision", "wins", "score", "rank", "errors", "restarts")
    ordering = ("number",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[DuelSeat]:
        return super().get_queryset(request).select_related("revision__competitor")


class SeatLogInline(ReadOnlyInline):
    """What each player's agent wrote, folded away as the logs of a duel were."""

    model = DuelSeat
    verbose_name = "log"
    verbose_name_plural = "logs"
    classes = ("collapse",)
    fields = ("number", "log_text")
    ordering = ("number",)

    @admin.display(description="log")
    def log_text(self, seat: DuelSeat) -> str:
        return preformatted(seat.log)


class MatchInline(ReadOnlyInline):
    model = Match
    fields = (
        "index",
        "first_player",
        "seats",
        "result",
        "scores",
        "fault",
        "steps",
        "duration",
        "replay",
    )
    ordering = ("index",)

    @admin.display(description="fault")
    def fault(self, match: Match) -> str:
        if not match.fault_kind:
            return EMPTY
        who = f"player {match.fault_player}" if match.fault_player else "both"
        return f"{match.fault_kind} ({who})"

    @admin.display(description="replay")
    def replay(self, match: Match) -> str:
        return public_link(match, "replay ↗")


@admin.register(Duel)
class DuelAdmin(JobColumns, ReadOnlyAdmin):
    list_display = (
        "id",
        "players",
        "environment",
        "tournament_link",
        "status_badge",
        "result",
        "score",
        "job_attempts",
        "errors",
        "created_at",
        "duration",
        "replay",
    )
    list_filter = (
        "status",
        "result",
        "is_validation",
        "environment",
        "tournament",
    )
    search_fields = ("seats__revision__competitor__name", "error", "job__error")
    list_select_related = ("tournament", "environment", "job")
    date_hierarchy = "created_at"
    inlines = (SeatInline, MatchInline, SeatLogInline)
    actions = ("rerun",)
    fieldsets = (
        (
            "Duel",
            {
                "fields": (
                    "players",
                    "num_players",
                    "environment",
                    "tournament_link",
                    "is_validation",
                    "round",
                    "num_matches",
                    "seed",
                    "replay",
                )
            },
        ),
        (
            "Status",
            {
                "fields": (
                    "status_badge",
                    "job_link",
                    "played_by",
                    "created_at",
                    "started",
                    "ended",
                    "duration",
                    "error_text",
                )
            },
        ),
        (
            "Result",
            {
                "fields": (
                    "result",
                    "draws",
                    "other_errors",
                )
            },
        ),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Duel]:
        return (
            super()
            .get_queryset(request)
            .prefetch_related(
                Prefetch("seats", DuelSeat.objects.select_related("revision__competitor"))
            )
        )

    @admin.display(description="players")
    def players(self, duel: Duel) -> str:
        revisions = duel.revisions()
        if duel.is_validation:
            return format_html("{} (self-play)", admin_link(revisions[0]))
        links = [admin_link(revision) for revision in revisions]
        return format_html(" vs ".join(["{}"] * len(links)), *links)

    @admin.display(description="environment", ordering="environment__title")
    def environment(self, duel: Duel) -> str:
        return duel.environment.title

    @admin.display(description="tournament", ordering="tournament__name")
    def tournament_link(self, duel: Duel) -> str:
        if duel.is_validation:
            return "validation"
        return admin_link(duel.tournament)

    @admin.display(description="status", ordering="status")
    def status_badge(self, duel: Duel) -> str:
        return status_badge(duel.status, duel.get_status_display())

    @admin.display(description="wins by seat (draws)")
    def score(self, duel: Duel) -> str:
        if duel.status != DuelStatus.SUCCEEDED:
            return EMPTY
        wins = "-".join(str(seat.wins) for seat in duel.players())
        return f"{wins} ({duel.draws})"

    @admin.display(description="faults by seat/other")
    def errors(self, duel: Duel) -> str:
        return "/".join([*(str(seat.errors) for seat in duel.players()), str(duel.other_errors)])

    @admin.display(description="replay")
    def replay(self, duel: Duel) -> str:
        return public_link(duel, "replay ↗")

    @admin.action(description="Re-run (failed duels only)")
    def rerun(self, request: HttpRequest, queryset: QuerySet[Duel]) -> None:
        def rerun_one(duel: Duel) -> str:
            if duel.is_validation:
                raise ArenaError("is a validation duel; re-validate its revision instead")
            if not duel_rerun(duel=duel):
                duel.refresh_from_db()
                status = duel.get_status_display().lower()
                raise ArenaError(f"not re-run: it is {status}, no longer failed")
            duel.refresh_from_db()
            return f"now {duel.get_status_display().lower()}"

        self.run_each(
            request,
            queryset.filter(Q(status=DuelStatus.FAILED) | Q(is_validation=True)),
            rerun_one,
            done="Re-ran",
        )
        skipped = queryset.exclude(Q(status=DuelStatus.FAILED) | Q(is_validation=True)).count()
        if skipped:
            self.message_user(
                request,
                f"{skipped} duel(s) skipped: only failed duels are re-run.",
                messages.WARNING,
            )


@admin.register(Match)
class MatchAdmin(ReadOnlyAdmin):
    list_display = (
        "__str__",
        "duel_link",
        "index",
        "result",
        "scores",
        "fault_kind",
        "fault_player",
        "steps",
        "duration",
        "replay",
    )
    list_filter = ("result", "fault_kind", "duel__environment")
    search_fields = ("duel__seats__revision__competitor__name",)
    list_select_related = ("duel",)
    fields = (
        "duel_link",
        "index",
        "first_player",
        "seats",
        "seed",
        "result",
        "scores",
        "fault_kind",
        "fault_player",
        "error_msg",
        "steps",
        "duration",
        "replay",
        "faults_json",
        "actions_json",
        "timings_json",
        "move_logs_json",
    )

    @admin.display(description="duel", ordering="duel")
    def duel_link(self, match: Match) -> str:
        return admin_link(match.duel, f"duel {match.duel_id}")

    @admin.display(description="replay")
    def replay(self, match: Match) -> str:
        return public_link(match, "replay ↗")

    @admin.display(description="faults")
    def faults_json(self, match: Match) -> str:
        return pretty_json(match.faults)

    @admin.display(description="actions")
    def actions_json(self, match: Match) -> str:
        return pretty_json(match.actions)

    @admin.display(description="timings")
    def timings_json(self, match: Match) -> str:
        return pretty_json(match.timings)

    @admin.display(description="move logs")
    def move_logs_json(self, match: Match) -> str:
        """What each player's agent logged at its moves: {player: [{step, log}]}."""
        return pretty_json({log.player: log.moves for log in match.logs.all()})
