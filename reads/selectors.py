"""What each page reads, gathered in one call per page."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.core.paginator import Page
from django.db.models import Count, F, Q, QuerySet

from core.models import (
    ApiToken,
    Competitor,
    Duel,
    DuelStatus,
    Environment,
    LeaderboardEntry,
    Revision,
    StepStatus,
    Tournament,
    TournamentStatus,
    User,
)
from core.models.submissions import STEPS, managers
from reads.access import (
    Visitor,
    can_see_competitor,
    can_see_logs,
    competitors_visible,
    duels_visible,
)
from reads.pages import (
    LEADERBOARD_ROWS,
    LEADERBOARD_TOP,
    RECENT_TOURNAMENTS,
    TOURNAMENT_ROWS,
    rows_page,
    visible_tournaments,
)
from reads.tournaments import DuelRow, duel_row


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
        live=[duel_row(duel) for duel in live],
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
        environment.competitors.listed().filter(managers(user)).order_by("name")
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
class ProfilePage:
    tokens: list[ApiToken]
    competitors: list[Competitor]


def profile_page(*, user: User) -> ProfilePage:
    return ProfilePage(
        tokens=list(user.api_tokens.active().order_by("-created_at")),
        competitors=list(user.competitors.listed().select_related("environment").order_by("name")),
    )
