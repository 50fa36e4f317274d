"""A competition's rules as they bind its teams: uploads (open, closed, limited per day and
per phase), final submissions, disqualification (``core.models.competitions``).

Every upload of a team's agent counts against its limits, whichever member made it and
whether or not it builds: a team tests its agent locally first (the starter agent's
commands), as Kaggle's limits count every submission.

The final tournament itself is the tournament manager's (``tournament_manager.services.
competitions``): launched at the deadline with ``final_revisions`` of every team.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    Competition,
    CompetitionPhase,
    Competitor,
    Revision,
    Team,
    User,
)


def moment(when: datetime) -> str:
    """A time in a refusal: UTC, to the minute (pages show it in the visitor's zone)."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _day_start(when: datetime) -> datetime:
    return datetime.combine(when.astimezone(UTC).date(), time(), UTC)


def team_uploads(team: Team, since: datetime | None = None) -> int:
    uploads = Revision.objects.filter(competitor__team=team)
    if since is not None:
        uploads = uploads.filter(created_at__gte=since)
    return uploads.count()


def upload_refusal(competitor: Competitor, now: datetime | None = None) -> str | None:
    """Why a team's agent may not take an upload now (None: it may): the competition not
    open yet or closed, the team disqualified, or a limit reached, saying when the next
    upload is allowed. Called with the competitor's row held, so that two uploads at once
    are counted one after the other."""
    team = competitor.team
    if team is None:
        return None
    competition = team.competition
    now = now or timezone.now()
    if team.is_disqualified:
        return f"team {team.name} is disqualified from {competition.title}"
    phase = competition.phase_at(now)
    following = competition.next_phase(now)
    if phase is None:
        opens = f" at {moment(following.starts_at)}" if following else " (no phase is set yet)"
        return f"{competition.title} is not open yet: uploads open{opens}"
    if not phase.uploads_open:
        reopens = _next_open(competition, now)
        return f"uploads to {competition.title} are closed ({phase.name})" + (
            f"; they open again at {moment(reopens.starts_at)}" if reopens else ""
        )
    if phase.daily_limit is not None:
        today = _day_start(now)
        if team_uploads(team, since=today) >= phase.daily_limit:
            return _limit_reached(
                f"team {team.name} has made its {phase.daily_limit} upload(s) of today (UTC)",
                today + timedelta(days=1),
                following,
            )
    if phase.total_limit is not None and team_uploads(team, since=phase.starts_at) >= (
        phase.total_limit
    ):
        return _limit_reached(
            f"team {team.name} has made its {phase.total_limit} upload(s) of the "
            f"{phase.name} phase",
            None,
            following,
        )
    return None


def _next_open(competition: Competition, now: datetime) -> CompetitionPhase | None:
    return (
        competition.phases.filter(starts_at__gt=now, uploads_open=True)
        .order_by("starts_at")
        .first()
    )


def _limit_reached(what: str, next_day: datetime | None, following: CompetitionPhase | None) -> str:
    """The refusal of an upload over a limit, with when the next one is allowed: the next
    day, unless the next phase comes first (and then by its rules)."""
    if following is not None and (next_day is None or following.starts_at <= next_day):
        if following.uploads_open:
            return f"{what}: the next upload is allowed at {moment(following.starts_at)}"
        return f"{what}, and uploads close at {moment(following.starts_at)}"
    if next_day is not None:
        return f"{what}: the next upload is allowed at {moment(next_day)}"
    return f"{what}: no more uploads in this phase"


@dataclasses.dataclass(frozen=True)
class DayUploads:
    team: str
    day: date
    uploads: int


def uploads_per_team_and_day(competition: Competition) -> list[DayUploads]:
    """Every team's uploads by day (UTC), newest day first: the organizers' view."""
    rows = (
        Revision.objects.filter(competitor__team__competition=competition)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("competitor__team__name", "day")
        .annotate(uploads=Count("pk"))
        .order_by("-day", "competitor__team__name")
    )
    return [
        DayUploads(team=row["competitor__team__name"], day=row["day"], uploads=row["uploads"])
        for row in rows
    ]


def _before_deadline(competition: Competition) -> None:
    deadline = competition.deadline
    if deadline is not None and timezone.now() >= deadline:
        raise ArenaError(
            f"the deadline of {competition.title} has passed ({moment(deadline)}): final "
            "submissions are fixed"
        )


def final_mark(*, revision: Revision, user: User, final: bool = True) -> None:
    """Mark a revision of a team's agent final (or not), before the deadline. A team marks
    ``Competition.final_submissions`` revisions at most, one per agent: marking another
    revision of an agent moves its mark."""
    competitor = revision.competitor
    team = competitor.team
    if team is None:
        raise ArenaError(f"{competitor.name} is not entered in a competition")
    if not competitor.is_managed_by(user):
        raise ArenaError(f"you are not in team {team.name}")
    competition = team.competition
    _before_deadline(competition)
    if not final:
        Revision.objects.filter(pk=revision.pk).update(marked_final_at=None)
        revision.marked_final_at = None
        return
    if not revision.is_valid:
        raise ArenaError(f"{revision} is not validated: only a validated revision plays a final")
    with transaction.atomic():
        # The team's row held: two marks at once are counted one after the other.
        Team.objects.select_for_update().get(pk=team.pk)
        marked = Revision.objects.filter(
            competitor__team=team, marked_final_at__isnull=False
        ).exclude(competitor=competitor)
        if marked.count() >= competition.final_submissions:
            raise ArenaError(
                f"team {team.name} has marked {competition.final_submissions} revision(s) "
                "final already: unmark one first"
            )
        Revision.objects.filter(competitor=competitor).exclude(pk=revision.pk).update(
            marked_final_at=None
        )
        now = timezone.now()
        Revision.objects.filter(pk=revision.pk).update(marked_final_at=now)
    revision.marked_final_at = now


def final_revisions(team: Team) -> list[Revision]:
    """What the team plays the final with: its marked revisions still valid, or else its
    newest validated revision; none for a disqualified team."""
    if team.is_disqualified:
        return []
    playable = Revision.objects.validated().filter(
        competitor__team=team, competitor__is_disabled=False
    )
    marked = list(playable.filter(marked_final_at__isnull=False).order_by("marked_final_at"))
    if marked:
        return marked
    newest = playable.order_by("-created_at", "-pk").first()
    return [newest] if newest else []
