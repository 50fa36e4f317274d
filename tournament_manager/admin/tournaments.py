"""Tournaments: created from validated revisions, scheduled, launched, stopped, cancelled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html, format_html_join

from core.admin.base import (
    EMPTY,
    ArenaAdmin,
    ReadOnlyInline,
    acting_user,
    admin_changelist_link,
    admin_link,
    public_link,
    status_badge,
)
from core.errors import ArenaError
from core.models import (
    Duel,
    DuelStatus,
    Environment,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tournament_manager.selectors import latest_validated_revisions, tournament_progress
from tournament_manager.services.settlement import duel_rerun
from tournament_manager.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_launch,
    tournament_schedule,
    tournament_stop,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class Counted(TypedDict):
    """What TournamentAdmin's list annotates each tournament with."""

    participants_count: int


class ParticipantChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, revision: Revision) -> str:
        owner = revision.competitor.owner
        return (
            f"{revision.competitor.environment.name} · {revision} "
            f"(by {owner.display_name or owner.email}, uploaded {revision.created_at:%Y-%m-%d})"
        )


class TournamentCreateForm(forms.ModelForm):
    """Picks the environment, then validated revisions of it (one per competitor), the
    format (rounds for Swiss) and optionally when the tournament manager launches it."""

    participants = ParticipantChoiceField(
        queryset=Revision.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Validated revisions only, one per competitor. Leave empty for the latest "
        "validated revision of every competitor of the environment.",
    )
    matches_per_duel = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="Empty: the environment's default.",
    )

    class Meta:
        model = Tournament
        fields = (
            "environment",
            "name",
            "format",
            "rounds",
            "matches_per_duel",
            "starts_at",
            "participants",
        )
        help_texts = {
            "rounds": "Swiss only: how many rounds are played.",
            "starts_at": "Optional: the tournament manager launches the draft at this time "
            "(UTC). Empty: launch it yourself with the “Launch” action.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["format"].required = False  # round robin when left out
        environment = self._chosen_environment()
        revisions = Revision.objects.validated().select_related(
            "competitor__environment", "competitor__owner"
        )
        if environment is None:
            links = format_html_join(
                ", ",
                '<a href="?environment={}">{}</a>',
                Environment.objects.values_list("pk", "title"),
            )
            self.fields["environment"].help_text = format_html(
                "Choose the environment first to list its revisions: {}.", links
            )
        else:
            revisions = revisions.filter(competitor__environment=environment)
            self.fields[
                "matches_per_duel"
            ].help_text = f"Empty: {environment.title}'s default, {environment.matches_per_duel}."
            if not self.is_bound and not self.initial.get("participants"):
                self.initial["participants"] = [
                    revision.pk for revision in latest_validated_revisions(environment)
                ]
        participants = self.fields["participants"]
        assert isinstance(participants, ParticipantChoiceField)
        participants.queryset = revisions.order_by(
            "competitor__environment__name", "competitor__name", "-version"
        )
        if isinstance(self.initial.get("participants"), str):
            self.initial["participants"] = self.initial["participants"].split(",")

    def _chosen_environment(self) -> Environment | None:
        value = self.data.get("environment") if self.is_bound else self.initial.get("environment")
        if not value:
            return None
        try:
            return Environment.objects.get(pk=value)
        except (Environment.DoesNotExist, ValueError):
            return None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        environment = cleaned.get("environment")
        if environment is None:
            return cleaned
        tournament_format = cleaned.get("format") or TournamentFormat.ROUND_ROBIN
        cleaned["format"] = tournament_format
        if tournament_format == TournamentFormat.SWISS and not cleaned.get("rounds"):
            self.add_error("rounds", "A Swiss tournament needs its number of rounds.")
        if tournament_format == TournamentFormat.SWISS and environment.players > 2:
            self.add_error(
                "format",
                f"Swiss pairs two players and {environment.title} seats {environment.players}: "
                "choose a round robin or a ladder.",
            )
        revisions = list(cleaned.get("participants") or [])
        if not revisions:
            revisions = latest_validated_revisions(environment)
        wrong = [str(r) for r in revisions if r.competitor.environment_id != environment.pk]
        if wrong:
            self.add_error("participants", f"Not in {environment.title}: {', '.join(wrong)}.")
        competitors = [revision.competitor_id for revision in revisions]
        if len(set(competitors)) != len(competitors):
            self.add_error("participants", "Choose one revision per competitor.")
        # A ladder may open empty: every revision validated later joins it.
        needed = max(2, environment.players)
        if len(revisions) < needed and tournament_format != TournamentFormat.LADDER:
            self.add_error(
                "participants",
                f"A tournament needs {'two' if needed == 2 else needed} validated revisions "
                f"of {environment}.",
            )
        cleaned["participants"] = revisions
        return cleaned


class ParticipantInline(ReadOnlyInline):
    model = Participant
    fields = (
        "rank",
        "revision_link",
        "owner",
        "points",
        "wins",
        "draws",
        "losses",
        "score",
        "withdrawn",
    )
    ordering = ("rank", "-points")
    show_change_link = False

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = flatten(self.fields or ())
        if obj is not None and obj.format == TournamentFormat.SWISS:
            fields.insert(fields.index("points") + 1, "buchholz")
        return tuple(fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return list(self.get_fields(request, obj))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Participant]:
        return (
            super()
            .get_queryset(request)
            .select_related("revision__competitor__owner", "revision__competitor__environment")
        )

    @admin.display(description="revision")
    def revision_link(self, participant: Participant) -> str:
        return admin_link(participant.revision)

    @admin.display(description="owner")
    def owner(self, participant: Participant) -> str:
        return str(participant.revision.competitor.owner)


#: A tournament's progress, shown read-only on its page.
_PROGRESS = (
    "status_badge",
    "progress",
    "current_round",
    "duels",
    "error",
    "created_by",
    "created_at",
    "started_at",
    "ended_at",
)


@admin.register(Tournament)
class TournamentAdmin(ArenaAdmin):
    can_delete = True
    list_display = (
        "name",
        "environment",
        "format",
        "status_badge",
        "progress",
        "participant_count",
        "matches_per_duel",
        "created_at",
        "started_at",
        "ended_at",
        "public",
    )
    list_filter = ("status", "environment", "format", "is_public")
    search_fields = ("name", "environment__name", "environment__title")
    list_select_related = ("environment",)
    date_hierarchy = "created_at"
    inlines = (ParticipantInline,)
    actions = ("launch", "cancel", "stop", "rerun_failed_duels")
    add_fieldsets = ((None, {"fields": TournamentCreateForm.Meta.fields}),)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "environment",
                    "format",
                    "rounds",
                    "is_public",
                    "matches_per_duel",
                    "concurrent_duels",
                    "starts_at",
                    "is_standing",
                )
            },
        ),
        ("Progress", {"fields": _PROGRESS}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tournament]:
        return super().get_queryset(request).annotate(participants_count=Count("participants"))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.add_fieldsets if obj is None else self.fieldsets

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        if obj is None:
            kwargs["form"] = TournamentCreateForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        fields: tuple[str, ...] = ("environment", "format", "is_standing", *_PROGRESS)
        if obj.status != TournamentStatus.DRAFT:
            fields += ("matches_per_duel", "rounds", "starts_at")
        return fields

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        return self.inlines if obj is not None else ()

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        try:
            return super().add_view(request, form_url, extra_context)
        except ArenaError as error:
            self.message_user(request, error.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def save_model(
        self, request: HttpRequest, obj: Tournament, form: forms.Form, change: bool
    ) -> None:
        if change:
            super().save_model(request, obj, form, change)
            if "starts_at" in form.changed_data:
                tournament_schedule(tournament=obj, starts_at=obj.starts_at)
            return
        tournament = tournament_create(
            environment=form.cleaned_data["environment"],
            name=form.cleaned_data["name"],
            revisions=form.cleaned_data["participants"],
            matches_per_duel=form.cleaned_data.get("matches_per_duel"),
            format=form.cleaned_data["format"],
            rounds=form.cleaned_data.get("rounds"),
            created_by=acting_user(request),
        )
        if form.cleaned_data.get("starts_at"):
            tournament_schedule(tournament=tournament, starts_at=form.cleaned_data["starts_at"])
        # The admin goes on with ``obj`` (messages, log, redirect): make it the created row.
        for field in Tournament._meta.concrete_fields:
            setattr(obj, field.attname, getattr(tournament, field.attname))
        obj._state.adding = False

    def response_add(self, request: HttpRequest, obj: Tournament, *args: Any) -> HttpResponse:
        then = (
            f"the tournament manager launches it at {obj.starts_at:%Y-%m-%d %H:%M} UTC"
            if obj.starts_at
            else "launch it with the “Launch” action"
        )
        self.message_user(
            request,
            f"{obj} is a draft with {obj.participants.count()} participants: {then}.",
            messages.INFO,
        )
        return super().response_add(request, obj, *args)

    @admin.display(description="status", ordering="status")
    def status_badge(self, tournament: Tournament) -> str:
        return status_badge(tournament.status, tournament.get_status_display())

    @admin.display(description="duels played / total (failed)")
    def progress(self, tournament: Tournament) -> str:
        if not tournament.duels_total:
            return EMPTY
        failed = (
            format_html(' <span style="color:#cf222e">({} failed)</span>', tournament.duels_failed)
            if tournament.duels_failed
            else ""
        )
        if tournament.is_ladder:
            # A ladder pairs until it is stopped: no total to reach.
            summary = format_html("{} played{}", tournament.duels_done, failed)
        else:
            summary = format_html(
                "{} / {} · {}%{}",
                tournament.duels_done,
                tournament.duels_total,
                tournament.progress_percent,
                failed,
            )
        if tournament.status != TournamentStatus.RUNNING:
            return summary
        # Live counts for running tournaments only (two queries each): few at a time.
        return format_html("{}<br><small>{}</small>", summary, tournament_progress(tournament))

    @admin.display(description="participants", ordering="participants_count")
    def participant_count(self, tournament: WithAnnotations[Tournament, Counted]) -> int:
        return tournament.participants_count

    @admin.display(description="duels")
    def duels(self, tournament: Tournament) -> str:
        if not tournament.duels_total:
            return EMPTY
        return admin_changelist_link(
            Duel, f"{tournament.duels_total} duels", tournament__id__exact=tournament.pk
        )

    @admin.display(description="public page")
    def public(self, tournament: Tournament) -> str:
        return public_link(tournament)

    @admin.action(description="Launch (schedule and play every duel)")
    def launch(self, request: HttpRequest, queryset: QuerySet[Tournament]) -> None:
        def launch_one(tournament: Tournament) -> str:
            tournament_launch(tournament=tournament)
            tournament.refresh_from_db()
            return (
                f"{tournament.get_status_display().lower()}, "
                f"{tournament.duels_done}/{tournament.duels_total} duels played"
            )

        self.run_each(request, queryset, launch_one, done="Launched")

    @admin.action(description="Cancel (queued duels are not played)")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Tournament]) -> None:
        def cancel_one(tournament: Tournament) -> None:
            if not tournament_cancel(tournament=tournament):
                tournament.refresh_from_db()
                status = tournament.get_status_display().lower()
                raise ArenaError(f"not cancelled: it is {status} already")

        self.run_each(request, queryset, cancel_one, done="Cancelled")

    @admin.action(description="Stop (ladders: queued duels are not played)")
    def stop(self, request: HttpRequest, queryset: QuerySet[Tournament]) -> None:
        def stop_one(tournament: Tournament) -> None:
            tournament_stop(tournament=tournament)

        self.run_each(request, queryset, stop_one, done="Stopped")

    @admin.action(description="Re-run failed duels")
    def rerun_failed_duels(self, request: HttpRequest, queryset: QuerySet[Tournament]) -> None:
        def rerun(tournament: Tournament) -> str:
            failed = list(tournament.duels.filter(status=DuelStatus.FAILED))
            if not failed:
                raise ArenaError("has no failed duel")
            requeued = [duel for duel in failed if duel_rerun(duel=duel)]
            if not requeued:
                raise ArenaError("not re-run: another organizer re-ran its failed duels already")
            tournament.refresh_from_db()
            return (
                f"{len(requeued)} duel(s) re-run; "
                f"now {tournament.get_status_display().lower()}, "
                f"{tournament.duels_failed} failed"
            )

        self.run_each(request, queryset, rerun, done="Re-ran failed duels of")
