"""Competitors, their revisions (with the build, validation and publication of each) and
their rating history. A private competitor is a 404 to everyone but its owner and the
organizers, as on the site (``reads.access``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, FilterLookup, FilterSchema, Query, Schema
from ninja.responses import Status
from pydantic import StrictBool

from api import auth
from api.duels import DuelOut
from api.errors import documented
from api.pagination import paginated
from api.params import Id, Number, Slug
from api.selectors import (
    competitor_with_summary,
    competitors_for,
    rating_changes_of,
    revisions_of,
)
from core.errors import ArenaError
from core.models import (
    Competitor,
    Duel,
    LeaderboardEntry,
    Rating,
    RatingChange,
    Revision,
    StepStatus,
)
from core.services.competitors import (
    CompetitorDeletion,
    competitor_delete,
    competitor_deletion_message,
    competitor_update,
)
from core.services.requested_duels import requested_duel_create
from core.services.revisions import RevisionDeletion, revision_revalidate
from reads.access import (
    AuthenticatedHttpRequest,
    get_competitor_for_user,
    get_duel_for_user,
    get_own_competitor,
    get_revision_for_user,
)
from reads.competitors import (
    NOTHING_TO_REVALIDATE,
    competitor_ladder_progress,
    competitor_paused,
    revalidation_candidate,
)
from reads.selectors import PipelineStep, pipeline_steps, revision_validation_duel
from tournament_manager.selectors import LadderProgress

router = auth.ArenaRouter(tags=["competitors"], auth=auth.read)


# --- schemas ------------------------------------------------------------------------


class RatingOut(Schema):
    """A per-match openskill rating (mu, sigma), kept as the history of each rated match;
    the leaderboard (its fitted score) is what ranks and pairs competitors."""

    mu: float
    sigma: float
    #: mu - 3 sigma.
    conservative: float
    games: int


class CompetitorOut(Schema):
    environment: str = Field(alias="environment.name")
    name: str
    owner: str = Field(alias="owner.display_name")
    owner_id: int
    is_public: bool
    #: Its owner lets everyone read its agent's logs (each finished duel's and evaluation's,
    #: its move logs in the replays, its validation's, an LLM player's conversations) while
    #: it is public; otherwise they are its owner's and the organizers'.
    share_logs: bool
    is_disabled: bool
    #: Who disabled it ("" while it plays): "owner" (who may enable it again) or
    #: "organizers".
    disabled_by: str
    created_at: datetime
    rating: RatingOut | None

    @staticmethod
    def resolve_rating(competitor: Competitor) -> Rating | None:
        # The reverse one-to-one raises an AttributeError when there is no rating yet.
        return getattr(competitor, "rating", None)


class CompetitorPatch(Schema):
    """Its owner's settings; only what is sent changes."""

    share_logs: StrictBool | None = Field(
        None,
        description="Let everyone read what its agent logged at each move of a finished "
        "duel's replay, while the competitor is public.",
    )
    is_public: StrictBool | None = Field(
        None,
        description="Public: anyone may see it, its page and (an upload's) code. Private: "
        "you and the organizers; its games in public tournaments still show its name.",
    )
    is_disabled: StrictBool | None = Field(
        None,
        description="Disabled: it leaves every tournament and ladder it is in within seconds, "
        "takes no upload and joins nothing, while everything it played stays. False enables "
        "it again (not one the organizers disabled): it rejoins the running ladders.",
    )


class Deletion(Schema):
    """What an owner's delete did (a revision's, a competitor's: each has ``erased``)."""

    #: "erased": gone; "withdrawn": disabled, its games kept.
    outcome: Literal["erased", "withdrawn"]
    message: str

    @staticmethod
    def resolve_outcome(deletion: RevisionDeletion | CompetitorDeletion) -> str:
        return "erased" if deletion.erased else "withdrawn"


class CompetitorDeletionOut(Deletion):
    #: The withdrawn competitor; None once erased (with its revisions: its name is free).
    competitor: CompetitorOut | None = None

    @staticmethod
    def resolve_message(deletion: CompetitorDeletion) -> str:
        return competitor_deletion_message(deletion)

    @staticmethod
    def resolve_competitor(deletion: CompetitorDeletion) -> Competitor | None:
        return deletion.kept


class LeaderboardPlaceOut(Schema):
    #: None while provisional.
    rank: int | None
    provisional: bool = Field(alias="is_provisional")
    #: The revision whose matches were fitted.
    revision: int = Field(alias="revision.version")
    score: float
    score_sd: float
    rank_best: int
    rank_worst: int
    matches: int


class LadderProgressOut(Schema):
    """How its newest validated revision is doing in a running ladder (a game's standing
    ladder, which rates every validated revision, or an organizer's)."""

    tournament: int = Field(alias="ladder.pk")
    name: str = Field(alias="ladder.name")
    #: Its matches in the ladder's played duels, each one rated.
    rated_matches: int
    #: When it plays next, in words: "playing now", "queued, waiting for a worker", "in
    #: about 2 minutes", "once the organizers' competitions waiting for a worker have been
    #: played"...
    next_duel: str


class CompetitorDetailOut(CompetitorOut):
    revisions: int = Field(alias="revision_count")
    latest_version: int | None
    leaderboard: LeaderboardPlaceOut | None
    #: Why ladders do not pair it now, None when they do: its last duels all failed, played
    #: by no one (its server down, its agent unable to start); it is paired again once its
    #: newest revision validates again.
    paused: str | None
    #: Its progress in a running ladder the caller may see; None when it is in none.
    ladder: LadderProgressOut | None

    @staticmethod
    def resolve_ladder(competitor: Competitor, context: dict[str, Any]) -> LadderProgress | None:
        return competitor_ladder_progress(context["request"].user, competitor)

    @staticmethod
    def resolve_paused(competitor: Competitor, context: dict[str, Any]) -> str | None:
        return competitor_paused(context["request"].user, competitor) or None

    @staticmethod
    def resolve_leaderboard(competitor: Competitor) -> LeaderboardEntry | None:
        return getattr(competitor, "leaderboard_entry", None)


class StepOut(Schema):
    status: StepStatus
    started_at: datetime | None
    ended_at: datetime | None
    #: Seconds, once ended.
    duration: float | None
    #: Times a worker took the step up.
    attempts: int
    #: None for the validation's when you may not read the agent's logs: its report ends
    #: with what the agent wrote.
    error: str | None


class StepWithLogOut(StepOut):
    #: None for the validation's when you may not read the agent's logs (it holds them):
    #: its owner's and the organizers', and everyone's once it is over if the competitor
    #: is public and shares them (``share_logs``).
    log: str | None


class RevisionOut(Schema):
    id: int
    environment: str = Field(alias="competitor.environment.name")
    competitor: str = Field(alias="competitor.name")
    version: int
    filename: str
    size: int
    sha256: str
    entry_point: str
    has_requirements: bool
    #: Withdrawn by its owner or disabled by the organizers: it plays no more.
    is_disabled: bool
    #: Built and validated, and not disabled: it may play.
    is_valid: bool
    created_at: datetime
    build: StepOut
    validation: StepOut
    publication: StepOut

    @staticmethod
    def resolve_build(revision: Revision, context: dict[str, Any]) -> PipelineStep:
        return _step(revision, "build", context)

    @staticmethod
    def resolve_validation(revision: Revision, context: dict[str, Any]) -> PipelineStep:
        return _step(revision, "validation", context)

    @staticmethod
    def resolve_publication(revision: Revision, context: dict[str, Any]) -> PipelineStep:
        return _step(revision, "publication", context)


class RevisionDetailOut(RevisionOut):
    """With each step's log, and the self-play duel that validated it (its matches replay)."""

    build: StepWithLogOut
    validation: StepWithLogOut
    publication: StepWithLogOut
    validation_duel: int | None

    @staticmethod
    def resolve_validation_duel(revision: Revision) -> int | None:
        duel = revision_validation_duel(revision)
        return duel.pk if duel else None


def _step(revision: Revision, name: str, context: dict[str, Any]) -> PipelineStep:
    request: HttpRequest = context["request"]
    steps = pipeline_steps(user=request.user, revision=revision)
    return next(step for step in steps if step.name == name)


class RatingChangeOut(Schema):
    created_at: datetime
    #: "match" for a rated match, "reset" when the organizers reset ratings.
    reason: str
    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float
    duel: int | None = Field(alias="duel_id")
    match_index: int | None

    @staticmethod
    def resolve_match_index(change: RatingChange) -> int | None:
        return change.match.index if change.match is not None else None


# --- filters ------------------------------------------------------------------------


class CompetitorFilters(FilterSchema):
    environment: Annotated[Slug | None, FilterLookup("environment__name")] = None
    owner_id: Id | None = None
    is_public: bool | None = None


class RevisionFilters(FilterSchema):
    build_status: StepStatus | None = None
    validation_status: StepStatus | None = None
    is_disabled: bool | None = None


class RatingChangeFilters(FilterSchema):
    reason: Annotated[Slug | None, FilterLookup("reason")] = None
    #: The changes of one duel's matches only.
    duel: Annotated[Id | None, FilterLookup("duel_id")] = None


# --- operations ---------------------------------------------------------------------

COMPETITOR = "/competitors/{environment}/{name}"


@router.get("/competitors", response=documented({200: list[CompetitorOut]}))
@paginated
def competitors_list(
    request: HttpRequest, filters: Query[CompetitorFilters], mine: bool = False
) -> QuerySet[Competitor]:
    """Competitors you may see

    Public competitors, and your own; every one for organizers. `mine=true` keeps only
    yours.
    """
    return filters.filter(competitors_for(user=request.user, owned_only=mine))


@router.get(COMPETITOR, response=documented({200: CompetitorDetailOut}, 404))
def competitor_detail(request: HttpRequest, environment: Slug, name: Slug) -> Competitor:
    """One competitor"""
    competitor = get_competitor_for_user(request.user, environment, name)
    return competitor_with_summary(competitor)


@router.patch(
    COMPETITOR, auth=auth.submit, response=documented({200: CompetitorDetailOut}, 400, 404)
)
def competitor_change(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug, payload: CompetitorPatch
) -> Competitor:
    """Change one of your competitors' settings

    For an upload, an LLM player and an online model alike. `share_logs`: whether everyone
    may read its agent's logs (each finished duel's and evaluation's, at each move in its
    replays, its validation's, an LLM player's conversations) while it is public.
    `is_public`: whether anyone may see it. `is_disabled`: take it out of play (it leaves
    every tournament and ladder; what it played stays) or back in.
    """
    competitor = get_own_competitor(request.user, environment, name)
    changes = payload.dict(exclude_unset=True)
    competitor_update(
        competitor=competitor,
        share_logs=changes.get("share_logs"),
        is_public=changes.get("is_public"),
        is_disabled=changes.get("is_disabled"),
    )
    return competitor_with_summary(competitor)


@router.delete(COMPETITOR, auth=auth.submit, response=documented({200: CompetitorDeletionOut}, 404))
def competitor_remove(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug
) -> CompetitorDeletion:
    """Delete one of your competitors

    Deletes each of its revisions as `DELETE /submissions/{id}` does: erased when nothing
    but its own validation refers to it. When every revision goes, the competitor goes too
    and its name is free. When one is kept (it played others, is in a tournament or on the
    leaderboard, or a worker holds it), the competitor is withdrawn instead: disabled, so it
    plays no more, while what it played stays for its opponents.
    """
    return competitor_delete(competitor=get_own_competitor(request.user, environment, name))


class TestDuelIn(Schema):
    #: The opponent: any competitor of the same game you may see (by name), whose newest
    #: validated revision plays.
    opponent: Slug


@router.post(
    f"{COMPETITOR}/test-duels", auth=auth.submit, response=documented({201: DuelOut}, 400, 404)
)
def test_duel_start(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug, payload: TestDuelIn
) -> Status[Duel]:
    """Start a test duel of one of your competitors against an agent of your choice

    Unrated and queued at once: your competitor's newest validated revision (seat 1) against
    the opponent's, a duel of the game's usual number of matches, kept with its replays
    (`GET /duels/{id}`). Two-player games; uploaded agents and LLM players (not online
    models, which play when their client is connected). At most `ARENA_TEST_DUELS_PER_HOUR`
    a user an hour (12 by default): past it, a 400 says when the next may start.
    """
    competitor = get_own_competitor(request.user, environment, name)
    opponent = get_competitor_for_user(request.user, environment, payload.opponent)
    duel = requested_duel_create(user=request.user, competitor=competitor, opponent=opponent)
    return Status(201, get_duel_for_user(request.user, duel.pk))


@router.post(
    f"{COMPETITOR}/revalidation",
    auth=auth.submit,
    response=documented({202: RevisionOut}, 400, 404),
)
def revalidation_start(
    request: AuthenticatedHttpRequest, environment: Slug, name: Slug
) -> Status[Revision]:
    """Have one of your competitors validated again

    While ladders pause it (its last duels all failed, played by no one), its newest
    validated revision is validated again (an upload by self-play, an LLM player by one
    request to its server), and ladders pair it again once that passes; an LLM player's
    newest revision whose validation failed (its server did not answer) may be too.
    Otherwise a 400 says why (an upload's fix is a new revision). A validation already
    queued or running is not started twice. The answer is the revision.
    """
    competitor = get_own_competitor(request.user, environment, name)
    revision = revalidation_candidate(request.user, competitor)
    if revision is None:
        raise ArenaError(NOTHING_TO_REVALIDATE.format(name=competitor.name))
    revision_revalidate(revision=revision)
    return Status(202, get_revision_for_user(request.user, environment, name, revision.version))


@router.get(f"{COMPETITOR}/revisions", response=documented({200: list[RevisionOut]}, 404))
@paginated
def revisions_list(
    request: HttpRequest, environment: Slug, name: Slug, filters: Query[RevisionFilters]
) -> QuerySet[Revision]:
    """A competitor's revisions, newest first"""
    competitor = get_competitor_for_user(request.user, environment, name)
    return filters.filter(revisions_of(competitor))


@router.get(
    f"{COMPETITOR}/revisions/{{version}}", response=documented({200: RevisionDetailOut}, 404)
)
def revision_detail(
    request: HttpRequest, environment: Slug, name: Slug, version: Number
) -> Revision:
    """One revision, with its build, validation and publication logs"""
    return get_revision_for_user(request.user, environment, name, version)


@router.get(f"{COMPETITOR}/ratings", response=documented({200: list[RatingChangeOut]}, 404))
@paginated
def rating_changes_list(
    request: HttpRequest, environment: Slug, name: Slug, filters: Query[RatingChangeFilters]
) -> QuerySet[RatingChange]:
    """A competitor's openskill history, oldest first

    Every change of its openskill rating: after each rated match, and resets. openskill is a
    per-match estimate kept as this history; it steers nothing (the ladder and Swiss seeding
    follow the leaderboard, which measured better), and the score the site shows is the
    leaderboard's (`/leaderboard/{name}`).
    """
    competitor = get_competitor_for_user(request.user, environment, name)
    return filters.filter(rating_changes_of(competitor))
