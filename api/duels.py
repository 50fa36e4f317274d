"""Duels, their matches and the matches' replays. A duel is visible with its tournament;
a validation duel (self-play) with its competitor; an agent's log only to whoever may read
its logs (``reads.access.can_see_logs``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest
from ninja import Field, FilterLookup, FilterSchema, Query, Schema

from api import auth
from api.errors import documented
from api.pagination import paginated
from api.params import Id, Number, Slug
from api.selectors import duels_for, matches_of
from core.models import Duel, DuelResult, DuelSeat, DuelStatus, Match
from core.models.tournaments import MAX_PLAYERS
from reads.access import get_duel_for_user, get_match_for_user
from reads.replays import (
    FaultNote,
    ReplayStates,
    match_faults,
    match_states,
    move_logs_visible,
    player_labels,
)
from reads.tournaments import SeatView, duel_players

router = auth.ArenaRouter(tags=["duels"], auth=auth.read)


# --- schemas ------------------------------------------------------------------------


class DuelPlayerOut(Schema):
    #: 1 to the duel's ``num_players``.
    number: int
    #: How the pages name it: "competitor vN" (with "(player N)" in self-play).
    label: str
    competitor: str = Field(alias="revision.competitor.name")
    owner: str = Field(alias="revision.competitor.owner.display_name")
    revision: int = Field(alias="revision.version")
    wins: int
    score: float
    #: Matches lost by a fault of its agent.
    errors: int
    restarts: int
    #: 1 for the best total score, equal scores sharing a rank; None until it is scored.
    rank: int | None


class DuelPlayerWithLogOut(DuelPlayerOut):
    #: What its agent wrote on stderr; None when you may not read its logs: its owner's and
    #: the organizers', and everyone's once the duel is over if its competitor is public and
    #: shares them (``share_logs``).
    log: str | None


def _players(duel: Duel, context: dict[str, Any]) -> list[SeatView]:
    request: HttpRequest = context["request"]
    return duel_players(user=request.user, duel=duel)


class _DuelFields(Schema):
    id: int
    tournament: int | None = Field(alias="tournament_id")
    round: int | None
    is_validation: bool
    #: A test duel: one its requester started against an agent of their choice, unrated
    #: (``POST /competitors/{environment}/{name}/test-duels``).
    is_test: bool
    environment: str = Field(alias="environment.name")
    #: 2, or up to 6 in a game of more than two players (``players`` lists every one).
    num_players: int
    status: DuelStatus
    #: None until it is over; RANKED when more than two players are not all equal.
    result: DuelResult | None
    num_matches: int
    draws: int
    #: Matches lost to faults of neither agent.
    other_errors: int
    attempts: int
    created_at: datetime
    #: Its job's times (a validation duel's own: it has no job); cleared when it is re-run.
    started_at: datetime | None
    ended_at: datetime | None
    #: The referee's word (the agents' faults, why it could not be played), else why its
    #: job failed or was cancelled; empty while it is queued or running.
    error: str

    @staticmethod
    def resolve_result(duel: Duel) -> str | None:
        return duel.result or None

    @staticmethod
    def resolve_is_test(duel: Duel) -> bool:
        return duel.requested_by_id is not None

    @staticmethod
    def resolve_started_at(duel: Duel) -> datetime | None:
        return duel.played.started_at

    @staticmethod
    def resolve_ended_at(duel: Duel) -> datetime | None:
        return duel.played.ended_at

    @staticmethod
    def resolve_error(duel: Duel) -> str:
        return duel.reported_error

    @staticmethod
    def resolve_attempts(duel: Duel) -> int:
        """Its job's claims; a validation duel was played once, by its validation."""
        job = getattr(duel, "job", None)
        return 1 if job is None else job.attempts


class DuelOut(_DuelFields):
    players: list[DuelPlayerOut]

    @staticmethod
    def resolve_players(duel: Duel, context: dict[str, Any]) -> list[SeatView]:
        return _players(duel, context)


class DuelDetailOut(_DuelFields):
    players: list[DuelPlayerWithLogOut]

    @staticmethod
    def resolve_players(duel: Duel, context: dict[str, Any]) -> list[SeatView]:
        return _players(duel, context)


class FaultOut(Schema):
    #: The duel player at fault, 1 to the duel's ``num_players``.
    player: int
    kind: str
    message: str
    #: The step (from 0) it happened on, when it was during a move.
    step: int | None
    #: What the kind means.
    explanation: str


def _faults(match: Match) -> list[FaultNote]:
    return match_faults(match, player_labels(match.duel))


class _MatchFields(Schema):
    index: int
    #: The duel player in the game's first seat.
    first_player: int
    #: The duel player in each of the game's seats.
    seats: list[int]
    seed: int
    result: DuelResult
    #: Every player's score, player 1's first.
    scores: list[float]
    steps: int
    #: Seconds.
    duration: float
    #: The duel player at fault, when exactly one was.
    fault_player: int | None
    fault_kind: str
    error: str = Field(alias="error_msg")
    faults: list[FaultOut]

    @staticmethod
    def resolve_faults(match: Match) -> list[FaultNote]:
        return _faults(match)


_REMOVED_NEXT_RELEASE = "Deprecated: use scores; removed in the next release."


def _score(match: Match, player: int) -> float:
    return float(match.scores[player - 1]) if len(match.scores) >= player else 0.0


class MatchOut(_MatchFields):
    """A match, and (last) the fields renamed when a duel's players became a list of
    seats, still written from the list for one release and marked deprecated in the
    OpenAPI document: the only place they are written. Drop them in the release after."""

    player_1_score: float = Field(deprecated=True, description=_REMOVED_NEXT_RELEASE)
    player_2_score: float = Field(deprecated=True, description=_REMOVED_NEXT_RELEASE)

    @staticmethod
    def resolve_player_1_score(match: Match) -> float:
        return _score(match, 1)

    @staticmethod
    def resolve_player_2_score(match: Match) -> float:
        return _score(match, 2)


class MoveLogOut(Schema):
    """What a player's agent wrote on stderr while choosing one move."""

    #: The duel player, 1 to the duel's ``num_players``.
    player: int
    #: The step (from 0) of the move: the ``step`` of its ``act`` request.
    step: int
    #: Capped (by default the first 4 KiB of the move, 64 KiB over the duel); a cut is said.
    log: str


class ReplayOut(Schema):
    """Everything a match stores, and every state recomputed from it by the game."""

    duel: int = Field(alias="match.duel_id")
    index: int = Field(alias="match.index")
    environment: str = Field(alias="match.duel.environment.name")
    seed: int = Field(alias="match.seed")
    #: The duel player in each of the game's seats.
    seats: list[int] = Field(alias="match.seats")
    #: One entry per step: each seat's action, None for a seat that did not move.
    actions: list[list[Any]] = Field(alias="match.actions")
    #: Seconds each seat took, in the same layout.
    timings: list[list[float | None]] = Field(alias="match.timings")
    result: DuelResult = Field(alias="match.result")
    faults: list[FaultOut]
    #: The game's state at the start and after each step (``states[0]`` is the start).
    states: list[dict[str, Any]]
    #: Why the states stop short: the game's rules changed, or it is no longer installed.
    replay_error: str = Field(alias="error")
    #: What the agents logged during their moves, player by player and step by step: a
    #: player's only to its owner and the organizers, and to everyone once the duel is
    #: over if its competitor is public and shares them (``share_logs``).
    move_logs: list[MoveLogOut]

    @staticmethod
    def resolve_faults(replayed: ReplayStates) -> list[FaultNote]:
        return _faults(replayed.match)

    @staticmethod
    def resolve_move_logs(replayed: ReplayStates, context: dict[str, Any]) -> list[MoveLogOut]:
        request: HttpRequest = context["request"]
        return [
            MoveLogOut(player=log.player, step=move["step"], log=move["log"])
            for log in move_logs_visible(request.user, replayed.match)
            for move in log.moves
        ]


# --- filters ------------------------------------------------------------------------


class DuelFilters(FilterSchema):
    tournament: Annotated[Id | None, FilterLookup("tournament_id")] = None
    environment: Annotated[Slug | None, FilterLookup("environment__name")] = None
    #: Duels where this competitor (by name) plays any seat.
    competitor: Slug | None = None
    status: DuelStatus | None = None
    is_validation: bool | None = None
    #: True: test duels only; False: none.
    is_test: bool | None = None

    def filter_is_test(self, value: bool | None) -> Q:
        return Q() if value is None else Q(requested_by__isnull=not value)

    def filter_competitor(self, name: str | None) -> Q:
        if not name:
            return Q()
        seated = DuelSeat.objects.filter(duel=OuterRef("pk"), revision__competitor__name=name)
        return Q(Exists(seated))


class MatchFilters(FilterSchema):
    result: DuelResult | None = None
    fault_player: Annotated[int | None, Field(ge=1, le=MAX_PLAYERS)] = None


# --- operations ---------------------------------------------------------------------


@router.get("/duels", response=documented({200: list[DuelOut]}))
@paginated
def duels_list(request: HttpRequest, filters: Query[DuelFilters]) -> QuerySet[Duel]:
    """Duels you may see, newest first"""
    return filters.filter(duels_for(user=request.user))


@router.get("/duels/{duel_id}", response=documented({200: DuelDetailOut}, 404))
def duel_detail(request: HttpRequest, duel_id: Id) -> Duel:
    """One duel, with its agents' logs when you may see them"""
    return get_duel_for_user(request.user, duel_id)


@router.get("/duels/{duel_id}/matches", response=documented({200: list[MatchOut]}, 404))
@paginated
def matches_list(
    request: HttpRequest, duel_id: Id, filters: Query[MatchFilters]
) -> QuerySet[Match]:
    """A duel's matches, in order"""
    return filters.filter(matches_of(get_duel_for_user(request.user, duel_id)))


@router.get("/duels/{duel_id}/matches/{index}", response=documented({200: MatchOut}, 404))
def match_detail(request: HttpRequest, duel_id: Id, index: Number) -> Match:
    """One match"""
    return get_match_for_user(request.user, duel_id, index)


@router.get("/duels/{duel_id}/matches/{index}/replay", response=documented({200: ReplayOut}, 404))
def match_replay(request: HttpRequest, duel_id: Id, index: Number) -> ReplayStates:
    """A match's replay: seed, actions, timings, faults and every state

    Games are deterministic: a match stores its seed and actions, and the states are
    recomputed from them by the game itself.
    """
    return match_states(get_match_for_user(request.user, duel_id, index))
