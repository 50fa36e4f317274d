"""What a competitor's page reads: its revisions, duels, ratings and progress, and what
its owner may do (test duels, re-validation), in one call."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.paginator import Page
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils.safestring import SafeString

from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelStatus,
    Evaluation,
    LeaderboardEntry,
    Participant,
    RatingChange,
    Revision,
    ScoreCompetition,
    StepStatus,
    TournamentFormat,
    TournamentStatus,
)
from core.services.online import online_present
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment
from reads.access import (
    Visitor,
    can_see_tournament,
    competitors_visible,
    duels_visible,
    is_organizer,
    is_owner,
    score_competitions_visible,
)
from reads.charts import ScorePoint, score_chart_svg
from reads.pages import REVISION_ROWS, TOURNAMENT_ROWS, rows_page, visible_tournaments
from reads.scores import score_leaderboard
from reads.tournaments import competitor_match_marks, duel_row
from tournament_manager.selectors import (
    LadderProgress,
    ladder_progress,
    paused_revisions,
)


@dataclasses.dataclass(frozen=True)
class CompetitorPage:
    competitor: Competitor
    #: Its place on the published leaderboard; None until its current revision is rated.
    entry: LeaderboardEntry | None
    #: A page of its revisions, newest first.
    revisions: Page
    #: A page of the tournaments it entered, newest first.
    tournaments: Page
    #: A page of ``DuelRow``: its duels the visitor may see (tournaments', ladders', test
    #: duels and validations), the latest first.
    duels: Page
    is_owner: bool
    #: Its published leaderboard score's history (``score_history``).
    score_chart: SafeString | None = None
    #: The visitor (logged in) may play it in the browser (``core.services.human``).
    playable: bool = False
    #: An online model whose client holds its stream now (``core.services.online.online_present``).
    connected: bool = False
    #: Why ladders do not pair it now ("" when they do): its last duels all failed
    #: (``tournament_manager.selectors.paused_revisions``).
    paused: str = ""
    #: To its owner, when it can play test duels: the agents it may be tried against.
    test_opponents: Sequence[Competitor] = ()
    #: Its newest validated revision in a running ladder the visitor may see: its rated
    #: matches there and when it plays next (``tournament_manager.selectors``).
    ladder: LadderProgress | None = None
    #: In a one-player game: its newest validated revision's evaluation in the game's
    #: standing score competition, and its place there once played.
    scored: ScoreProgress | None = None
    #: To its owner: the revision they may have validated again (``revalidation_candidate``).
    revalidatable: Revision | None = None


def rating_changes(competitor: Competitor) -> QuerySet[RatingChange]:
    """Every change of the competitor's rating, oldest first."""
    return RatingChange.objects.filter(rating__competitor=competitor).order_by("created_at", "pk")


def score_history(competitor: Competitor) -> list[ScorePoint]:
    """Its published leaderboard score after each refit where its matches changed, oldest
    first, each new version marked."""
    rows = competitor.leaderboard_points.order_by("fitted_at", "pk").values_list(
        "revision_id", "score", "score_sd"
    )
    points = []
    previous = None
    for number, (revision, score, sd) in enumerate(rows, start=1):
        points.append(
            ScorePoint(
                number=number,
                score=score,
                sd=sd,
                new_version=previous is not None and revision != previous,
            )
        )
        previous = revision
    return points


def competitor_page(
    *,
    user: Visitor,
    competitor: Competitor,
    revisions_page: str | None = None,
    tournaments_page: str | None = None,
    duels_page: str | None = None,
) -> CompetitorPage:
    tournaments = (
        visible_tournaments(user)
        .filter(participants__revision__competitor=competitor)
        .distinct()
        .order_by("-created_at", "-pk")
    )
    # Its newest validated revision, asked once for all that depends on it.
    newest = _newest_validated(competitor)
    validated = newest.revision is not None
    paused = _paused(user, competitor, newest)
    return CompetitorPage(
        competitor=competitor,
        entry=_leaderboard_entry(competitor),
        revisions=rows_page(
            competitor.revisions.order_by("-version"), revisions_page, REVISION_ROWS
        ),
        tournaments=rows_page(tournaments, tournaments_page, TOURNAMENT_ROWS),
        duels=_competitor_duels(user, competitor, duels_page),
        is_owner=is_owner(user, competitor),
        score_chart=score_chart_svg(score_history(competitor)),
        playable=user.is_authenticated and competitor_playable(competitor, validated=validated),
        paused=paused,
        connected=competitor.is_online and bool(online_present([competitor])),
        ladder=_ladder_progress(user, newest),
        scored=_score_progress(user, competitor, newest),
        revalidatable=_revalidation_candidate(competitor, newest, paused)
        if is_owner(user, competitor)
        else None,
        **(_test_duels(user, competitor, validated) if is_owner(user, competitor) else {}),
    )


def _leaderboard_entry(competitor: Competitor) -> LeaderboardEntry | None:
    """Its entry, read with it when it was (``get_competitor_for_user``)."""
    try:
        return competitor.leaderboard_entry
    except LeaderboardEntry.DoesNotExist:
        return None


#: Duels listed on a page of a competitor's history.
COMPETITOR_DUEL_ROWS = 20


def _competitor_duels(user: Visitor, competitor: Competitor, number: str | None) -> Page:
    duels = (
        Duel.objects.with_competitor(competitor)
        .filter(duels_visible(user))
        .with_seats()
        .select_related("tournament")
        .order_by("-created_at", "-pk")
    )
    page = rows_page(duels, number, COMPETITOR_DUEL_ROWS)
    page.object_list = competitor_match_marks(
        [duel_row(duel) for duel in page.object_list], competitor.pk
    )
    return page


@dataclasses.dataclass(frozen=True)
class ScoreProgress:
    evaluation: Evaluation
    #: Its place on the competition's leaderboard; None until it is played.
    rank: int | None


def _score_progress(user: Visitor, competitor: Competitor, newest: _Newest) -> ScoreProgress | None:
    if competitor.environment.players != 1 or newest.revision is None:
        return None
    evaluation = (
        Evaluation.objects.filter(
            revision_id=newest.revision,
            competition__is_standing=True,
            competition__in=ScoreCompetition.objects.filter(score_competitions_visible(user)),
        )
        .select_related("competition")
        .order_by("-pk")
        .first()
    )
    if evaluation is None or evaluation.competition is None:
        return None
    rank = None
    if evaluation.status == DuelStatus.SUCCEEDED:
        rows = score_leaderboard(user=user, competition=evaluation.competition)
        rank = next((row.rank for row in rows if row.evaluation.pk == evaluation.pk), None)
    return ScoreProgress(evaluation=evaluation, rank=rank)


def _ladder_progress(user: Visitor, newest: _Newest) -> LadderProgress | None:
    if newest.revision is None or newest.ladder is None:
        return None
    progress = ladder_progress(newest.revision, newest.ladder)
    return progress if can_see_tournament(user, progress.ladder) else None


def _test_duels(user: Visitor, competitor: Competitor, validated: bool) -> dict[str, Any]:
    """What its owner's test duel form offers (``core.services.requested_duels``): the
    competitors of the game the owner may see that can play one (LLM players their own
    only: another's would spend its owner's tokens). Its test duels are in its duels'
    history, marked as such."""
    able = (
        competitor.environment.players == 2
        and not competitor.has_seat
        and not competitor.is_disabled
        and validated
    )
    if not able:
        return {}
    playing = Revision.objects.validated().filter(competitor=OuterRef("pk"))
    opponents = (
        Competitor.objects.filter(
            competitors_visible(user),
            Exists(playing),
            environment=competitor.environment,
            is_disabled=False,
        )
        .exclude(kind__in=[CompetitorKind.ONLINE, CompetitorKind.HUMAN])
        .exclude(Q(kind=CompetitorKind.LLM) & ~Q(owner_id=user.pk))
        .exclude(pk=competitor.pk)
        .select_related("owner")
        .order_by("name")
    )
    return {"test_opponents": list(opponents)}


@dataclasses.dataclass(frozen=True)
class _Newest:
    """Its newest validated revision, as the page needs it: its id (None without one),
    how many of its ladder duels failed in all (only a revision with failures may be
    paused) and the running ladder it is entered in, if any."""

    revision: int | None = None
    failures: int = 0
    ladder: int | None = None


def _newest_validated(competitor: Competitor) -> _Newest:
    """``_Newest``, in one query, kept on the instance: the API's competitor detail asks it
    for ``paused`` and for ``ladder``."""
    kept: _Newest | None = competitor.__dict__.get("_newest_validated")
    if kept is None:
        kept = competitor.__dict__["_newest_validated"] = _newest_validated_read(competitor)
    return kept


def _newest_validated_read(competitor: Competitor) -> _Newest:
    failed = Q(
        duel_seats__duel__status=DuelStatus.FAILED,
        duel_seats__duel__tournament__format=TournamentFormat.LADDER,
    )
    ladders = Participant.objects.filter(
        revision=OuterRef("pk"),
        withdrawn=False,
        tournament__format=TournamentFormat.LADDER,
        tournament__status=TournamentStatus.RUNNING,
    ).order_by("-tournament_id")
    newest = (
        Revision.objects.validated()
        .filter(competitor=competitor)
        .order_by("-version")
        .annotate(
            failures=Count("duel_seats", filter=failed),
            ladder=Subquery(ladders.values("tournament_id")[:1]),
        )
        .values_list("pk", "failures", "ladder")
        .first()
    )
    return _Newest(*newest) if newest is not None else _Newest()


#: Why an entry is paused, as everyone but its owner and the organizers reads it: the
#: failures' own words may come from a tournament or a test duel they may not see.
PAUSED_PUBLICLY = "its last duels could not be played; it is paired again once it validates again"


def _paused(user: Visitor, competitor: Competitor, newest: _Newest) -> str:
    if newest.revision is None or newest.failures < settings.ARENA_LADDER_PAUSE_AFTER_FAILURES:
        return ""
    why = paused_revisions([newest.revision]).get(newest.revision, "")
    if why and not (is_owner(user, competitor) or is_organizer(user)):
        return PAUSED_PUBLICLY
    return why


def competitor_ladder_progress(user: Visitor, competitor: Competitor) -> LadderProgress | None:
    """How its newest validated revision is doing in a running ladder the visitor may
    see (``tournament_manager.selectors.ladder_progress``), as its page says it."""
    return _ladder_progress(user, _newest_validated(competitor))


#: Why an owner's re-validation did nothing (``revalidation_candidate`` found none).
NOTHING_TO_REVALIDATE = (
    "{name} has nothing to validate again: it is not paused, and an upload's fix is a new revision"
)


def revalidation_candidate(user: Visitor, competitor: Competitor) -> Revision | None:
    """The revision its owner may have validated again, if any: its newest validated one
    while ladders pause it (its server is back, its fault fixed), or an LLM player's newest
    whose validation failed (its server did not answer then: one request tries again)."""
    newest = _newest_validated(competitor)
    return _revalidation_candidate(competitor, newest, _paused(user, competitor, newest))


def _revalidation_candidate(
    competitor: Competitor, newest: _Newest, paused: str
) -> Revision | None:
    if paused and newest.revision is not None:
        return Revision.objects.select_related("competitor").get(pk=newest.revision)
    if competitor.is_llm:
        latest = competitor.revisions.select_related("competitor").order_by("-version").first()
        if latest is not None and latest.validation_status == StepStatus.FAILED:
            return latest
    return None


def competitor_paused(user: Visitor, competitor: Competitor) -> str:
    """Why ladders do not pair its newest validated revision now ("" when they do), with
    the failures' detail for its owner and the organizers only."""
    return _paused(user, competitor, _newest_validated(competitor))


def competitor_playable(competitor: Competitor, *, validated: bool | None = None) -> bool:
    """A person may play it in the browser: an agent with a validated revision (not one
    that plays over the network) in a turn-based game."""
    if competitor.has_seat or competitor.is_disabled:
        return False
    try:
        if make_environment(competitor.environment.game).simultaneous:
            return False
    except (UnknownEnvironment, InvalidEnvironmentInfo):
        return False
    if validated is None:
        validated = Revision.objects.validated().filter(competitor=competitor).exists()
    return validated
