"""What each page reads, gathered in one call per page."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.utils.safestring import SafeString

from core.models import (
    ApiToken,
    Competitor,
    CompetitorKind,
    Duel,
    DuelSeat,
    DuelStatus,
    Environment,
    Evaluation,
    LeaderboardEntry,
    Match,
    Participant,
    RatingChange,
    Revision,
    ScoreCompetition,
    StepStatus,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.models.submissions import STEPS
from core.services.online import online_present
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment
from reads.access import (
    Visitor,
    can_see_competitor,
    can_see_logs,
    can_see_tournament,
    competitors_visible,
    duels_visible,
    is_organizer,
    is_owner,
    score_competitions_visible,
    tournaments_visible,
)
from reads.charts import ScorePoint, score_chart_svg
from reads.outcomes import DuelOutcome, duel_outcome
from reads.replays import (
    FaultNote,
    first_mover_label,
    game_of,
    match_faults,
    match_result_text,
    player_labels,
    result_text,
)
from reads.scores import score_leaderboard
from tournament_manager.selectors import (
    LadderProgress,
    TournamentProgress,
    ladder_progress,
    paused_revisions,
    tournament_progress,
)

RECENT_TOURNAMENTS = 10
#: Rows a page of the site's lists shows: the list's page number comes from the address
#: (``?page=2``), so that no page reads more rows as the history grows.
LEADERBOARD_ROWS = 50
#: The environment page's top of its leaderboard (the rest on the leaderboard's page).
LEADERBOARD_TOP = 20
TOURNAMENT_ROWS = 20
STANDING_ROWS = 50
DUEL_ROWS = 50
REVISION_ROWS = 20


def rows_page(rows: QuerySet[Any], number: str | int | None, per_page: int) -> Page:
    """Page ``number`` of ``rows`` (an ordered query): a count and one slice. Anything but
    a page number gives the first page; a number past the end, the last."""
    return Paginator(rows, per_page).get_page(number)


def visible_tournaments(user: Visitor) -> QuerySet[Tournament]:
    return Tournament.objects.select_related("environment").filter(tournaments_visible(user))


@dataclasses.dataclass(frozen=True)
class HomePage:
    environments: list[Environment]
    tournaments: list[Tournament]
    #: Tournaments and ladders running now, the newest first.
    running: list[Tournament] = dataclasses.field(default_factory=list)
    #: Duels being played now (``DuelRow``), the latest first: each page shows it live.
    live: list[DuelRow] = dataclasses.field(default_factory=list)
    #: Each environment's first three on its published leaderboard (the visitor may see
    #: them), by environment id.
    top: dict[int, list[LeaderboardEntry]] = dataclasses.field(default_factory=dict)


#: Running tournaments and live duels on the home page.
RUNNING_SHOWN = 10


def home_page(*, user: Visitor) -> HomePage:
    environments = Environment.objects.filter(is_active=True).annotate(
        competitor_count=Count("competitors", filter=Q(competitors__is_disabled=False))
    )
    tournaments = visible_tournaments(user).filter(status=TournamentStatus.COMPLETED)
    running = visible_tournaments(user).filter(status=TournamentStatus.RUNNING)
    live = (
        Duel.objects.filter(duels_visible(user), status=DuelStatus.RUNNING)
        .with_seats()
        .order_by("-started_at", "-pk")[:RUNNING_SHOWN]
    )
    top: dict[int, list[LeaderboardEntry]] = {}
    for entry in (
        LeaderboardEntry.objects.filter(
            competitors_visible(user, "competitor"), rank__lte=3, environment__is_active=True
        )
        .select_related("competitor")
        .order_by("environment_id", "rank")
    ):
        top.setdefault(entry.environment_id, []).append(entry)
    return HomePage(
        environments=list(environments),
        tournaments=list(
            tournaments.order_by(F("ended_at").desc(nulls_last=True))[:RECENT_TOURNAMENTS]
        ),
        running=list(running.order_by("-started_at", "-pk")[:RUNNING_SHOWN]),
        live=[_duel_row(duel) for duel in live],
        top=top,
    )


@dataclasses.dataclass(frozen=True)
class LeaderboardRow:
    entry: LeaderboardEntry
    competitor: Competitor
    #: False for a private competitor the visitor may not open: its name shows, unlinked.
    linked: bool


def leaderboard_entries(environment: Environment) -> QuerySet[LeaderboardEntry]:
    """The published leaderboard's entries: ranked best first, then the provisional ones."""
    return (
        LeaderboardEntry.objects.published()
        .filter(environment=environment, competitor__is_disabled=False)
        .select_related("competitor__owner", "competitor__environment", "revision")
    )


def leaderboard_rows(*, user: Visitor, entries: Iterable[LeaderboardEntry]) -> list[LeaderboardRow]:
    return [
        LeaderboardRow(
            entry=entry,
            competitor=entry.competitor,
            linked=can_see_competitor(user, entry.competitor),
        )
        for entry in entries
    ]


def leaderboard(*, user: Visitor, environment: Environment) -> list[LeaderboardRow]:
    """The whole published leaderboard."""
    return leaderboard_rows(user=user, entries=leaderboard_entries(environment))


@dataclasses.dataclass(frozen=True)
class LeaderboardPage:
    environment: Environment
    #: A page of ``LeaderboardRow``.
    rows: Page
    provisional_matches: int = dataclasses.field(
        default_factory=lambda: settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES
    )


def leaderboard_page(
    *, user: Visitor, environment: Environment, number: str | None = None
) -> LeaderboardPage:
    """One page of the published leaderboard."""
    rows = rows_page(leaderboard_entries(environment), number, LEADERBOARD_ROWS)
    rows.object_list = leaderboard_rows(user=user, entries=rows.object_list)
    return LeaderboardPage(environment=environment, rows=rows)


@dataclasses.dataclass(frozen=True)
class EnvironmentPage:
    environment: Environment
    #: The top of the leaderboard (``LEADERBOARD_TOP`` rows).
    leaderboard: list[LeaderboardRow]
    #: Its entries in all.
    leaderboard_count: int
    #: A page of its tournaments, newest first.
    tournaments: Page
    #: The visitor's own competitors in this environment.
    own_competitors: list[Competitor]
    competitor_count: int
    #: Below this many rated matches an entry is provisional.
    provisional_matches: int = dataclasses.field(
        default_factory=lambda: settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES
    )


def environment_page(
    *, user: Visitor, environment: Environment, tournaments_page: str | None = None
) -> EnvironmentPage:
    own = (
        environment.competitors.listed().filter(owner=user).order_by("name")
        if isinstance(user, User)
        else Competitor.objects.none()
    )
    entries = leaderboard_entries(environment)
    tournaments = visible_tournaments(user).filter(environment=environment)
    return EnvironmentPage(
        environment=environment,
        leaderboard=leaderboard_rows(user=user, entries=entries[:LEADERBOARD_TOP]),
        leaderboard_count=entries.count(),
        tournaments=rows_page(
            tournaments.order_by("-created_at", "-pk"), tournaments_page, TOURNAMENT_ROWS
        ),
        own_competitors=list(own),
        competitor_count=environment.competitors.listed().filter(is_disabled=False).count(),
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
    page.object_list = [_duel_row(duel) for duel in page.object_list]
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


#: The steps that run the agent: the validation plays it, so its log and its report (which
#: ends with the agent's last lines) are the agent's log. The build's and the
#: publication's are our own tools' accounts (no agent code runs in a build: binary wheels
#: only), open with the revision.
AGENT_LOG_STEPS = frozenset({"validation"})


@dataclasses.dataclass(frozen=True)
class PipelineStep:
    name: str
    status: str
    status_label: str
    started_at: datetime | None
    ended_at: datetime | None
    duration: float | None
    #: None when it holds the agent's log and the visitor may not read it (``can_see_logs``).
    error: str | None
    log: str | None
    #: Times a worker took the step up (a worker that died makes it start again).
    attempts: int = 0

    @property
    def is_pending(self) -> bool:
        return self.status in {StepStatus.QUEUED, StepStatus.RUNNING}


@dataclasses.dataclass(frozen=True)
class RevisionPage:
    revision: Revision
    steps: list[PipelineStep]
    validation_duel: Duel | None
    tournaments: list[Tournament]

    @property
    def is_pending(self) -> bool:
        return any(step.is_pending for step in self.steps)

    @property
    def has_logs(self) -> bool:
        """Whether a step has a log, shown or hidden from the visitor."""
        return any(step.log is None or step.log for step in self.steps)


def pipeline_steps(*, user: Visitor, revision: Revision) -> list[PipelineStep]:
    """The revision's build, validation and publication, in that order, from their jobs
    (one query, none when they were prefetched); the validation's log and report only for
    whoever may read the agent's logs."""
    jobs = {job.kind: job for job in revision.jobs.all()}
    steps = []
    for name in STEPS:
        job = jobs.get(name)
        status = getattr(revision, f"{name}_status")
        over = status not in {StepStatus.QUEUED, StepStatus.RUNNING}
        hidden = name in AGENT_LOG_STEPS and not can_see_logs(
            user, revision.competitor, finished=over
        )
        steps.append(
            PipelineStep(
                name=name,
                status=status,
                status_label=getattr(revision, f"get_{name}_status_display")(),
                started_at=job.started_at if job else None,
                ended_at=job.ended_at if job else None,
                duration=job.duration if job else None,
                error=None if hidden else (job.error if job else ""),
                log=None if hidden else (job.log if job else ""),
                attempts=job.attempts if job else 0,
            )
        )
    return steps


def revision_validation_duel(revision: Revision) -> Duel | None:
    """Its latest self-play."""
    return (
        Duel.objects.of_revision(revision)
        .filter(is_validation=True)
        .order_by("-created_at")
        .first()
    )


def revision_page(*, user: Visitor, revision: Revision) -> RevisionPage:
    steps = pipeline_steps(user=user, revision=revision)
    validation_duel = revision_validation_duel(revision)
    tournaments = (
        visible_tournaments(user).filter(participants__revision=revision).order_by("-created_at")
    )
    return RevisionPage(
        revision=revision,
        steps=steps,
        validation_duel=validation_duel,
        tournaments=list(tournaments),
    )


@dataclasses.dataclass(frozen=True)
class StandingRow:
    participant: Participant
    competitor: Competitor
    linked: bool


@dataclasses.dataclass(frozen=True)
class DuelRow:
    duel: Duel
    label_1: str
    #: Player 2, or in a game of more than two every player after the first.
    label_2: str
    result_text: str
    #: Every player's total score, player 1's first.
    scores: list[float]
    #: Its badge: what happened to its players (a fault, a validation failed), not only
    #: its job's status.
    outcome: DuelOutcome


def _duel_row(duel: Duel) -> DuelRow:
    labels = player_labels(duel)
    players = duel.players()
    return DuelRow(
        duel,
        labels[1],
        ", ".join(labels[number] for number in range(2, duel.num_players + 1)),
        _duel_result_text(duel, labels, players),
        [player.score for player in players],
        duel_outcome(duel, labels=labels, seats=players),
    )


@dataclasses.dataclass(frozen=True)
class CrossCell:
    """One duel in a crosstable, from its row's player's side."""

    duel: Duel
    #: "won", "lost", "drawn", or "" while it is not over.
    outcome: str
    #: Matches won by the row's player and by the column's.
    wins: int
    losses: int


@dataclasses.dataclass(frozen=True)
class CrossRow:
    standing: StandingRow
    #: One per column, in the rows' order; None on the diagonal or for a pair with no duel.
    cells: list[CrossCell | None]


#: A round robin shows its crosstable up to this many participants (a wider one does not
#: fit a page: its duels are listed below it all the same).
CROSSTABLE_MOST = 20


def _crosstable(user: Visitor, tournament: Tournament) -> list[CrossRow]:
    """Every participant against every other, best first: a round robin of two-player
    duels with at most ``CROSSTABLE_MOST`` participants; otherwise none. Three queries."""
    if tournament.format != TournamentFormat.ROUND_ROBIN or tournament.environment.players != 2:
        return []
    participants = list(_participants(tournament)[: CROSSTABLE_MOST + 1])
    if not 2 <= len(participants) <= CROSSTABLE_MOST:
        return []
    order = {participant.revision_id: index for index, participant in enumerate(participants)}
    grid: list[list[CrossCell | None]] = [[None] * len(participants) for _ in participants]
    for duel in tournament.duels.with_seats():
        one, two = duel.players()
        if one.revision_id not in order or two.revision_id not in order:
            continue
        for mine, theirs in ((one, two), (two, one)):
            outcome = ""
            if duel.status == DuelStatus.SUCCEEDED and duel.result:
                outcome = (
                    "drawn"
                    if (mine.rank or 0) == (theirs.rank or 0)
                    else "won"
                    if (mine.rank or 0) < (theirs.rank or 0)
                    else "lost"
                )
            grid[order[mine.revision_id]][order[theirs.revision_id]] = CrossCell(
                duel, outcome, mine.wins, theirs.wins
            )
    standings = _standing_rows(user=user, participants=participants)
    return [CrossRow(standing, cells) for standing, cells in zip(standings, grid, strict=True)]


@dataclasses.dataclass(frozen=True)
class TournamentPage:
    tournament: Tournament
    #: A page of ``StandingRow``, best first.
    standings: Page
    #: A page of ``DuelRow``, the latest first.
    duels: Page
    #: Its duels by status, and the time its remaining ones take.
    progress: TournamentProgress
    #: A round robin's crosstable (``_crosstable``); empty for other formats.
    crosstable: list[CrossRow] = dataclasses.field(default_factory=list)

    @property
    def is_running(self) -> bool:
        return self.tournament.status == TournamentStatus.RUNNING

    @property
    def shows_buchholz(self) -> bool:
        """Swiss standings break ties on points by Buchholz; other formats have none."""
        return self.tournament.format == TournamentFormat.SWISS

    # A ladder has no number of duels to reach (it pairs until stopped): its page shows
    # counts, never a share of a total.
    @property
    def done_percent(self) -> int:
        """Duels played, of all it plays: failed ones are not played (``failed_percent``)."""
        return _percent(self.tournament.duels_done, self.tournament.duels_total)

    @property
    def failed_percent(self) -> int:
        return _percent(self.tournament.duels_failed, self.tournament.duels_total)

    @property
    def minutes_left(self) -> int | None:
        return self.progress.minutes_left

    @property
    def no_duels_text(self) -> str:
        """What its list of duels says while it has none."""
        if not self.tournament.is_ladder:
            return "The duels are scheduled when the tournament starts."
        if self.tournament.status == TournamentStatus.DRAFT:
            return "No duel yet: the ladder pairs its entries once it starts."
        if self.tournament.is_finished:
            return "The ladder played no duel."
        players = self.tournament.environment.players
        return f"No duel yet: the ladder pairs its entries as soon as {players} of them can play."


def _percent(part: int, total: int) -> int:
    """``part`` of ``total`` in whole percent, rounded down (100 only once all are
    there), and 1 at least for any part."""
    if not total or not part:
        return 0
    return max(1, 100 * part // total)


def _participants(tournament: Tournament) -> QuerySet[Participant]:
    """Best first; the withdrawn last. A ladder's rank is its fit's (``standings_compute``)
    and its duel points rank nothing: an entry not ranked yet comes after the ranked ones
    by name, not by its points."""
    points = () if tournament.is_ladder else ("-points",)
    return tournament.participants.select_related(
        "revision__competitor__owner", "revision__competitor__environment"
    ).order_by(
        "withdrawn", F("rank").asc(nulls_last=True), *points, "revision__competitor__name", "pk"
    )


def _standing_rows(*, user: Visitor, participants: Iterable[Participant]) -> list[StandingRow]:
    """Private competitors' names show, unlinked."""
    return [
        StandingRow(
            participant=participant,
            competitor=participant.revision.competitor,
            linked=can_see_competitor(user, participant.revision.competitor),
        )
        for participant in participants
    ]


def tournament_standings(*, user: Visitor, tournament: Tournament) -> list[StandingRow]:
    """Every participant, best first; the withdrawn last."""
    return _standing_rows(user=user, participants=_participants(tournament))


def tournament_page(
    *,
    user: Visitor,
    tournament: Tournament,
    standings_page: str | None = None,
    duels_page: str | None = None,
) -> TournamentPage:
    standings = rows_page(_participants(tournament), standings_page, STANDING_ROWS)
    standings.object_list = _standing_rows(user=user, participants=standings.object_list)
    # A ladder's newest duels first (what its readers come for); rounds in order otherwise.
    order = ("-pk",) if tournament.format == TournamentFormat.LADDER else ("round", "pk")
    duels = rows_page(tournament.duels.with_seats().order_by(*order), duels_page, DUEL_ROWS)
    duels.object_list = [_duel_row(duel) for duel in duels.object_list]
    return TournamentPage(
        tournament=tournament,
        standings=standings,
        duels=duels,
        progress=tournament_progress(tournament),
        crosstable=_crosstable(user, tournament),
    )


@dataclasses.dataclass(frozen=True)
class SeatView:
    number: int
    label: str
    revision: Revision
    linked: bool
    wins: int
    score: float
    errors: int
    restarts: int
    #: None when the visitor may not read it.
    log: str | None
    #: 1 for the best total score (shared by equal ones); None until the duel is scored.
    rank: int | None = None


@dataclasses.dataclass(frozen=True)
class MatchRow:
    match: Match
    first_label: str
    result_text: str
    faults: list[FaultNote]


@dataclasses.dataclass(frozen=True)
class DuelPage:
    duel: Duel
    players: list[SeatView]
    matches: list[MatchRow]
    result_text: str
    #: Its badge and the sentence beside it (``reads.outcomes``).
    outcome: DuelOutcome
    #: Times a worker took its job up; None for a validation duel, which has no job of its
    #: own (its revision's validation played it).
    attempts: int | None

    @property
    def is_pending(self) -> bool:
        return not self.duel.is_finished

    @property
    def has_llm_seat(self) -> bool:
        return any(player.revision.competitor.is_llm for player in self.players)

    @property
    def duration(self) -> float | None:
        return self.duel.played.seconds


def _duel_result_text(
    duel: Duel, labels: dict[int, str], players: Sequence[DuelSeat] | None = None
) -> str:
    ranks = [player.rank or 0 for player in players] if players else None
    return result_text(duel.result, labels, ranks) or duel.get_status_display()


def duel_players(*, user: Visitor, duel: Duel) -> list[SeatView]:
    """Every player, player 1 first; an agent's log only for whoever may read its logs
    (``can_see_logs``)."""
    labels = player_labels(duel)
    players = []
    for player in duel.players():
        competitor = player.revision.competitor
        visible = can_see_competitor(user, competitor)
        readable = can_see_logs(user, competitor, finished=duel.is_finished)
        players.append(
            SeatView(
                number=player.number,
                label=labels[player.number],
                revision=player.revision,
                # A person in the browser has no competitor page: shown by name only.
                linked=visible and not competitor.is_human,
                wins=player.wins,
                score=player.score,
                errors=player.errors,
                restarts=player.restarts,
                log=player.log if readable else None,
                rank=player.rank,
            )
        )
    return players


def duel_page(*, user: Visitor, duel: Duel) -> DuelPage:
    labels = player_labels(duel)
    game = game_of(duel)  # one copy of the game, reset for each match's first mover
    matches = list(duel.matches.order_by("index"))
    seats = duel.players()
    job = getattr(duel, "job", None)  # none for a validation duel
    return DuelPage(
        duel=duel,
        players=duel_players(user=user, duel=duel),
        matches=[
            MatchRow(
                match=match,
                first_label=first_mover_label(match, labels, game),
                result_text=match_result_text(match, labels),
                faults=match_faults(match, labels),
            )
            for match in matches
        ],
        result_text=_duel_result_text(duel, labels, seats),
        outcome=duel_outcome(duel, labels=labels, seats=seats, matches=matches),
        attempts=job.attempts if job is not None else None,
    )


@dataclasses.dataclass(frozen=True)
class ProfilePage:
    tokens: list[ApiToken]
    competitors: list[Competitor]


def profile_page(*, user: User) -> ProfilePage:
    return ProfilePage(
        tokens=list(user.api_tokens.active().order_by("-created_at")),
        competitors=list(user.competitors.listed().select_related("environment").order_by("name")),
    )
