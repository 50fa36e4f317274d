"""The organizers' admin of score competitions: create one for a one-player game, start
(or re-run) its evaluations, follow them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin.base import (
    ArenaAdmin,
    ReadOnlyAdmin,
    acting_user,
    admin_link,
    preformatted,
    public_link,
    status_badge,
)
from core.admin.jobs import JobColumns
from core.errors import ArenaError
from core.models import Environment, Evaluation, ScoreCompetition
from tournament_manager.score_competitions import (
    score_competition_rerun_failed,
    score_competition_start,
)


class ScoreCompetitionForm(forms.ModelForm):
    class Meta:
        model = ScoreCompetition
        fields = ("environment", "name", "episodes", "seed", "is_public")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Both are read-only (absent) once the competition has started.
        if "environment" in self.fields:
            environment = self.fields["environment"]
            environment.queryset = Environment.objects.filter(players=1)  # type: ignore[attr-defined]
        if "episodes" in self.fields:
            self.fields["episodes"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        environment = cleaned.get("environment")
        if environment is not None and not cleaned.get("episodes"):
            # The environment's matches per duel: its info.yml's episodes per evaluation.
            cleaned["episodes"] = environment.matches_per_duel
            self.instance.episodes = environment.matches_per_duel
        return cleaned


@admin.register(ScoreCompetition)
class ScoreCompetitionAdmin(ArenaAdmin):
    can_delete = True
    form = ScoreCompetitionForm
    list_display = ("name", "environment", "episodes", "evaluations_done", "started_at", "public")
    list_filter = ("environment", "is_public")
    search_fields = ("name", "environment__name")
    list_select_related = ("environment",)
    actions = ("start", "rerun_failed")
    readonly_fields = ("entered_agents", "started_at", "created_by", "created_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Once started, its evaluations were played on these episodes: a change would
        # leave the leaderboard comparing other episodes than it says.
        started = obj is not None and obj.started_at is not None
        return (*self.readonly_fields, *(("environment", "episodes", "seed") if started else ()))

    def save_model(
        self, request: HttpRequest, obj: ScoreCompetition, form: forms.Form, change: bool
    ) -> None:
        if not change:
            obj.created_by = acting_user(request)
        super().save_model(request, obj, form, change)

    @admin.display(description="online agents and LLM players entered")
    def entered_agents(self, competition: ScoreCompetition) -> str:
        # Entered by their owners only (their client must be connected, their tokens are
        # theirs to spend): every hosted agent's newest validated revision needs no entry.
        entered = competition.entered.order_by("name") if competition.pk else []
        return ", ".join(f"{competitor.name} ({competitor.kind})" for competitor in entered) or "-"

    @admin.display(description="evaluations played / total")
    def evaluations_done(self, competition: ScoreCompetition) -> str:
        evaluations = list(competition.evaluations.values_list("status", flat=True))
        return f"{evaluations.count('succeeded')} / {len(evaluations)}"

    @admin.display(description="public page")
    def public(self, competition: ScoreCompetition) -> str:
        return public_link(competition)

    @admin.action(description="Start / re-run (evaluate every current agent afresh)")
    def start(self, request: HttpRequest, queryset: QuerySet[ScoreCompetition]) -> None:
        def start_one(competition: ScoreCompetition) -> str:
            evaluations = score_competition_start(competition=competition)
            return f"{len(evaluations)} evaluation(s) queued"

        self.run_each(request, queryset, start_one, done="Started")

    @admin.action(description="Re-run failed evaluations (keep the others)")
    def rerun_failed(self, request: HttpRequest, queryset: QuerySet[ScoreCompetition]) -> None:
        def rerun_one(competition: ScoreCompetition) -> str:
            count = score_competition_rerun_failed(competition=competition)
            if not count:
                raise ArenaError("has no failed evaluation")
            return f"{count} evaluation(s) queued again"

        self.run_each(request, queryset, rerun_one, done="Re-ran failed evaluations of")


@admin.register(Evaluation)
class EvaluationAdmin(JobColumns, ReadOnlyAdmin):
    list_display = (
        "pk",
        "competition",
        "revision",
        "is_validation",
        "status_label",
        "mean_return",
        "faulty_episodes",
        "job_attempts",
        "played_by",
        "ended",
    )
    list_filter = ("status", "is_validation", "competition")
    list_select_related = ("competition", "revision__competitor", "job")
    fields = (
        "competition_link",
        "revision",
        "is_validation",
        "status_label",
        "job_link",
        "played_by",
        "started",
        "ended",
        "mean_return",
        "ci_low",
        "ci_high",
        "episodes_played",
        "faulty_episodes",
        "restarts",
        "error_text",
        "log_text",
    )

    @admin.display(description="status", ordering="status")
    def status_label(self, evaluation: Evaluation) -> str:
        return status_badge(evaluation.status, evaluation.get_status_display())

    @admin.display(description="competition")
    def competition_link(self, evaluation: Evaluation) -> str:
        return admin_link(evaluation.competition)

    @admin.display(description="log")
    def log_text(self, evaluation: Evaluation) -> str:
        return preformatted(evaluation.log)
