"""Score competitions of one-player games: their leaderboards of mean returns with 95 %
intervals, as on the site, and each evaluation's episodes (seed and actions replay one);
an owner entering (or withdrawing) an online agent or an LLM player. A private
competition is a 404 to everyone but the organizers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, FilterLookup, FilterSchema, Query, Schema
from ninja.responses import Status

from api import auth
from api.errors import documented
from api.pagination import paginated
from api.params import Id, Slug
from core.models import Competitor, DuelStatus, Evaluation, ScoreCompetition
from core.services.scores import score_entry_create, score_entry_withdraw
from reads.access import AuthenticatedHttpRequest
from reads.scores import (
    ScoreRow,
    get_evaluation_for_user,
    get_own_entrant,
    get_score_competition_for_user,
    score_entrants_visible,
    score_leaderboard,
    visible_score_competitions,
)

router = auth.ArenaRouter(tags=["score competitions"], auth=auth.read)


class ScoreCompetitionOut(Schema):
    id: int
    name: str
    environment: str = Field(alias="environment.name")
    #: Episodes each agent plays; every agent plays the same seeds.
    episodes: int
    seed: int
    #: The episodes' seeds, drawn from ``seed``.
    seeds: list[int]
    created_at: datetime
    started_at: datetime | None


class ScoreEntryOut(Schema):
    #: None for an evaluation not (or not successfully) played.
    rank: int | None
    competitor: str = Field(alias="competitor.name")
    owner: str = Field(alias="competitor.owner.display_name")
    revision: int = Field(alias="evaluation.revision.version")
    evaluation: int = Field(alias="evaluation.pk")
    status: DuelStatus = Field(alias="evaluation.status")
    mean_return: float | None = Field(alias="evaluation.mean_return")
    #: The 95 % Student-t interval of the mean (None with fewer than two episodes).
    ci_low: float | None = Field(alias="evaluation.ci_low")
    ci_high: float | None = Field(alias="evaluation.ci_high")
    episodes: int = Field(alias="evaluation.episodes_played")
    faulty_episodes: int = Field(alias="evaluation.faulty_episodes")


class EntrantOut(Schema):
    id: int
    name: str
    kind: str
    owner: str = Field(alias="owner.display_name")


class ScoreCompetitionDetailOut(ScoreCompetitionOut):
    """With the leaderboard: played evaluations by mean return, best first, then the
    others; and the online agents and LLM players their owners entered (hosted agents
    need no entry)."""

    leaderboard: list[ScoreEntryOut]
    entered: list[EntrantOut]

    @staticmethod
    def resolve_entered(competition: ScoreCompetition, context: dict[str, Any]) -> list[Competitor]:
        request: HttpRequest = context["request"]
        return score_entrants_visible(user=request.user, competition=competition)

    @staticmethod
    def resolve_leaderboard(
        competition: ScoreCompetition, context: dict[str, Any]
    ) -> list[ScoreRow]:
        request: HttpRequest = context["request"]
        return score_leaderboard(user=request.user, competition=competition)


class EpisodeOut(Schema):
    index: int
    seed: int
    #: The episode's return; an episode ended by a fault scores the game's worst return.
    episode_return: float = Field(alias="return")
    steps: int
    terminated: bool
    truncated: bool
    error_msg: str
    faults: list[dict[str, Any]]
    #: One list per step holding the agent's action.
    actions: list[list[Any]]


class EvaluationOut(Schema):
    id: int
    competition: int | None = Field(alias="competition_id")
    competitor: str = Field(alias="revision.competitor.name")
    revision: int = Field(alias="revision.version")
    status: DuelStatus
    #: The referee's word (faulty episodes, why it could not be played), else why its
    #: job failed or was cancelled; empty while it is queued or running.
    error: str
    mean_return: float | None
    ci_low: float | None
    ci_high: float | None
    restarts: int
    episodes: list[EpisodeOut]

    @staticmethod
    def resolve_error(evaluation: Evaluation) -> str:
        return evaluation.reported_error


class ScoreCompetitionFilters(FilterSchema):
    environment: Annotated[Slug | None, FilterLookup("environment__name")] = None


#: A score competition, and its entries, in the paths of their operations.
COMPETITION = "/score-competitions/{competition_id}"
ENTRIES = f"{COMPETITION}/entries"


@router.get("/score-competitions", response=documented({200: list[ScoreCompetitionOut]}))
@paginated
def score_competitions_list(
    request: HttpRequest, filters: Query[ScoreCompetitionFilters]
) -> QuerySet[ScoreCompetition]:
    """Score competitions you may see, newest first"""
    return filters.filter(visible_score_competitions(request.user).order_by("-created_at", "-pk"))


@router.get(COMPETITION, response=documented({200: ScoreCompetitionDetailOut}, 404))
def score_competition_detail(request: HttpRequest, competition_id: Id) -> ScoreCompetition:
    """One score competition, with its leaderboard

    `mean_return` is the mean over the competition's episodes; `ci_low`..`ci_high` its 95 %
    confidence interval, Student's t over the episodes.
    """
    return get_score_competition_for_user(request.user, competition_id)


@router.get("/evaluations/{evaluation_id}", response=documented({200: EvaluationOut}, 404))
def evaluation_detail(request: HttpRequest, evaluation_id: Id) -> Evaluation:
    """One evaluation, with every episode"""
    return get_evaluation_for_user(request.user, evaluation_id)


class EntryIn(Schema):
    competitor: Slug = Field(
        description="The name of one of your online agents or LLM players in the "
        "competition's game."
    )


class EntryOut(Schema):
    competitor: EntrantOut
    #: Its evaluation, queued at once in a started competition; None in a draft (it is
    #: evaluated when the competition starts).
    evaluation: int | None


@router.post(ENTRIES, auth=auth.submit, response=documented({201: EntryOut}, 400, 404))
def score_entry_add(
    request: AuthenticatedHttpRequest, competition_id: Id, payload: EntryIn
) -> Status[dict[str, Any]]:
    """Enter one of your online agents or LLM players

    It is evaluated on the competition's episodes like a hosted agent: at once in a started
    competition (an online agent's client must be connected to play them, `python -m
    arena_sdk connect --no-join`), else when the competition starts; and again in each
    re-run until it is withdrawn. Hosted agents need no entry; a competitor of another game,
    disabled, or already entered is refused.
    """
    competition = get_score_competition_for_user(request.user, competition_id)
    competitor = get_own_entrant(
        request.user, environment=competition.environment, name=payload.competitor
    )
    evaluation = score_entry_create(competition=competition, competitor=competitor)
    return Status(
        201, {"competitor": competitor, "evaluation": evaluation.pk if evaluation else None}
    )


class WithdrawalOut(Schema):
    competitor: EntrantOut
    #: Its evaluation already played (or failed), which stays on the leaderboard until the
    #: competition is re-run; None if it had none.
    evaluation: int | None


@router.delete(
    f"{ENTRIES}/{{name}}",
    auth=auth.submit,
    response=documented({200: WithdrawalOut}, 400, 404),
)
def score_entry_delete(
    request: AuthenticatedHttpRequest, competition_id: Id, name: Slug
) -> dict[str, Any]:
    """Withdraw one of your entered online agents or LLM players

    It is not evaluated again; its evaluation still queued is removed, one played stays on
    the leaderboard until the competition is re-run. Refused while it is being evaluated.
    """
    competition = get_score_competition_for_user(request.user, competition_id)
    competitor = get_own_entrant(request.user, environment=competition.environment, name=name)
    score_entry_withdraw(competition=competition, competitor=competitor)
    kept = competition.evaluations.filter(revision__competitor=competitor).first()
    return {"competitor": competitor, "evaluation": kept.pk if kept else None}
