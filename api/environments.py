"""Environments (the games) and their published leaderboards."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from ninja import FilterSchema, Query, Schema

from api import auth
from api.errors import documented
from api.pagination import paginated
from api.params import Slug
from core.models import Environment
from reads.selectors import leaderboard as leaderboard_rows

router = auth.ArenaRouter(tags=["environments"], auth=auth.read)


class Limits(Schema):
    move_time: float
    time_bank: float
    startup_time: float
    memory_mb: int
    cpu_seconds: int


class EnvironmentOut(Schema):
    name: str
    #: The OpenSpiel game spec (openspiel:chess); empty for a built-in game.
    spec: str
    title: str
    description: str
    players: int
    matches_per_duel: int
    ladder_matches_per_duel: int
    is_active: bool
    limits: Limits

    @staticmethod
    def resolve_limits(environment: Environment) -> Environment:
        # The limits are the environment's own fields, which ``Limits`` reads.
        return environment


class EnvironmentDetailOut(EnvironmentOut):
    rules: str


class LeaderboardEntryOut(Schema):
    #: None while provisional.
    rank: int | None
    provisional: bool
    competitor: str
    owner: str
    revision: int
    score: float
    score_sd: float
    rank_best: int
    rank_worst: int
    matches: int
    wins: int
    draws: int
    losses: int


class LeaderboardOut(Schema):
    environment: str
    fitted_at: datetime | None
    #: Elo points the first mover gains; None before the first fit.
    first_move_advantage: float | None
    provisional_below_matches: int
    entries: list[LeaderboardEntryOut]


def environment_named(name: str) -> Environment:
    environment = Environment.objects.filter(name=name).first()
    if environment is None:
        raise Http404(f"No environment named {name!r}.")
    return environment


class EnvironmentFilters(FilterSchema):
    #: Open to new uploads.
    is_active: bool | None = None


@router.get("/environments", response=documented({200: list[EnvironmentOut]}))
@paginated
def environments_list(
    request: HttpRequest, filters: Query[EnvironmentFilters]
) -> QuerySet[Environment]:
    """Every environment"""
    return filters.filter(Environment.objects.order_by("name"))


@router.get("/environments/{name}", response=documented({200: EnvironmentDetailOut}, 404))
def environment_detail(request: HttpRequest, name: Slug) -> Environment:
    """One environment, with rules"""
    return environment_named(name)


@router.get("/leaderboard/{name}", response=documented({200: LeaderboardOut}, 404))
def leaderboard(request: HttpRequest, name: Slug) -> LeaderboardOut:
    """The published leaderboard of an environment

    Ranked entries best first, then the provisional ones (fewer rated matches than
    `provisional_below_matches`). `score` is on the Elo scale, 1500 the field's mean;
    `rank_best`..`rank_worst` is the 95 % interval of the rank.
    """
    environment = environment_named(name)
    rows = leaderboard_rows(user=request.user, environment=environment)
    return LeaderboardOut(
        environment=environment.name,
        fitted_at=environment.leaderboard_fitted_at,
        first_move_advantage=environment.first_move_advantage,
        provisional_below_matches=settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES,
        entries=[
            LeaderboardEntryOut(
                rank=row.entry.rank,
                provisional=row.entry.is_provisional,
                competitor=row.competitor.name,
                owner=row.competitor.owner.display_name,
                revision=row.entry.revision.version,
                score=row.entry.score,
                score_sd=row.entry.score_sd,
                rank_best=row.entry.rank_best,
                rank_worst=row.entry.rank_worst,
                matches=row.entry.matches,
                wins=row.entry.wins,
                draws=row.entry.draws,
                losses=row.entry.losses,
            )
            for row in rows
        ],
    )
