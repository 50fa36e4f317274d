"""Tournaments and their standings. A private tournament is a 404 to everyone but the
organizers, as on the site."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, FilterLookup, FilterSchema, Query, Schema

from api import auth
from api.errors import documented
from api.pagination import paginated
from api.params import Id, Slug
from api.selectors import tournaments_for
from core.models import Tournament, TournamentFormat, TournamentStatus
from reads.access import get_tournament_for_user
from reads.tournaments import StandingRow, tournament_standings
from referee.match_points import exact_score, score_number

router = auth.ArenaRouter(tags=["tournaments"], auth=auth.read)


class TournamentOut(Schema):
    id: int
    name: str
    environment: str = Field(alias="environment.name")
    format: TournamentFormat
    status: TournamentStatus
    matches_per_duel: int
    #: Swiss only.
    rounds: int | None
    #: Swiss: the round being played (0 before the launch).
    current_round: int
    created_at: datetime
    starts_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    #: Why it failed, if it did.
    error: str
    duels_total: int
    duels_done: int
    duels_failed: int


class StandingOut(Schema):
    #: None until ranked; ties share a rank.
    rank: int | None = Field(alias="participant.rank")
    competitor: str = Field(alias="competitor.name")
    owner: str = Field(alias="competitor.owner.display_name")
    revision: int = Field(alias="participant.revision.version")
    #: 2 per duel won, 1 per draw (a Swiss bye counts as a won duel).
    points: int = Field(alias="participant.points")
    wins: int = Field(alias="participant.wins")
    draws: int = Field(alias="participant.draws")
    losses: int = Field(alias="participant.losses")
    #: Sum of match points over every duel, exact where a JSON number can be: an integer
    #: as an integer (43), a fraction as the float nearest to it (127/3: 42.333333333333336).
    score: int | float
    #: The same sum as an exact fraction, ``"127/3"`` (``"43"`` for an integer): equal
    #: strings are equal totals.
    score_fraction: str
    #: Swiss only (None otherwise): the opponents' points, its own for a bye; breaks ties
    #: on points.
    buchholz: int | None
    byes: int = Field(alias="participant.byes")
    seed: int | None = Field(alias="participant.seed")
    withdrawn: bool = Field(alias="participant.withdrawn")

    @staticmethod
    def resolve_score(row: StandingRow) -> int | float:
        return score_number(row.participant.score)

    @staticmethod
    def resolve_score_fraction(row: StandingRow) -> str:
        return str(exact_score(row.participant.score))

    @staticmethod
    def resolve_buchholz(row: StandingRow) -> int | None:
        if row.participant.tournament.format != TournamentFormat.SWISS:
            return None
        return row.participant.buchholz


class TournamentDetailOut(TournamentOut):
    """With the standings, best first; the withdrawn last."""

    standings: list[StandingOut]

    @staticmethod
    def resolve_standings(tournament: Tournament, context: dict[str, Any]) -> list[StandingRow]:
        request: HttpRequest = context["request"]
        return tournament_standings(user=request.user, tournament=tournament)


class TournamentFilters(FilterSchema):
    environment: Annotated[Slug | None, FilterLookup("environment__name")] = None
    status: TournamentStatus | None = None
    format: TournamentFormat | None = None


@router.get("/tournaments", response=documented({200: list[TournamentOut]}))
@paginated
def tournaments_list(
    request: HttpRequest, filters: Query[TournamentFilters]
) -> QuerySet[Tournament]:
    """Tournaments you may see, newest first"""
    return filters.filter(tournaments_for(user=request.user))


@router.get("/tournaments/{tournament_id}", response=documented({200: TournamentDetailOut}, 404))
def tournament_detail(request: HttpRequest, tournament_id: Id) -> Tournament:
    """One tournament, with its standings"""
    return get_tournament_for_user(request.user, tournament_id)
