"""A competition's schedule kept by the tournament manager: its final launched at the
deadline with every team's final revisions, its standings published when it ends (or by
the organizers, when they hold them out), and a team disqualified.

Uploads close at the deadline by the final phase's own rule (``core.services.
competitions.upload_refusal``); nothing has to run for that.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    Competition,
    CompetitionPhase,
    DisabledBy,
    PhasePlays,
    Revision,
    Team,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from core.services.competitions import final_revisions
from core.services.competitors import competitor_disable
from tournament_manager.services.tournaments import (
    tournament_create,
    tournament_launch,
    tournament_stop,
)

logger = logging.getLogger(__name__)


def competitions_advance() -> bool:
    """Open and stop the competitions' own ladders with their phases, launch every final
    whose deadline has come, and publish every final that ended and is not held out;
    returns whether it did any of it."""
    now = timezone.now()
    did_work = phase_ladders_keep(now)
    due = Competition.objects.filter(
        final_tournament__isnull=True,
        final_error="",
        phases__plays=PhasePlays.FINAL,
        phases__starts_at__lte=now,
    ).distinct()
    for competition in due:
        did_work |= final_launch(competition=competition) is not None
    ended = Competition.objects.filter(
        final_published_at__isnull=True,
        final_hidden=False,
        final_tournament__status=TournamentStatus.COMPLETED,
    )
    for competition in ended:
        did_work |= final_publish(competition=competition)
    return did_work


def phase_ladders_keep(now: datetime) -> bool:
    """A phase that plays the competition's own ladder opens it at its start (once: one
    an organizer stopped stays stopped) and stops it when it ends; returns whether it
    opened or stopped one."""
    did_work = False
    running = Tournament.objects.filter(
        entrants__isnull=False, status=TournamentStatus.RUNNING
    ).select_related("entrants")
    for ladder in running:
        assert ladder.entrants is not None
        phase = ladder.entrants.phase_at(now)
        if (
            phase is None
            or phase.plays != PhasePlays.OWN_LADDER
            or (ladder.started_at is not None and ladder.started_at < phase.starts_at)
        ):
            try:
                tournament_stop(tournament=ladder)
            except ArenaError:
                continue  # another manager (or an organizer) stopped it first
            logger.info("%s: its ladder stopped with its phase", ladder.entrants)
            did_work = True
    playing = Competition.objects.filter(
        phases__plays=PhasePlays.OWN_LADDER, phases__starts_at__lte=now
    ).distinct()
    for competition in playing:
        phase = competition.phase_at(now)
        if phase is not None and phase.plays == PhasePlays.OWN_LADDER:
            did_work |= _phase_ladder_open(competition, phase) is not None
    return did_work


def _phase_ladder_open(competition: Competition, phase: CompetitionPhase) -> Tournament | None:
    with transaction.atomic():
        # Its row held: of two managers at the phase's start, one opens it.
        Competition.objects.select_for_update().get(pk=competition.pk)
        if competition.ladders.filter(started_at__gte=phase.starts_at).exists():
            return None
        ladder = tournament_create(
            environment=competition.environment,
            name=f"{competition.title}: {phase.name}",
            revisions=[],
            format=TournamentFormat.LADDER,
        )
        ladder.entrants = competition
        ladder.is_public = competition.is_public and phase.standings_public
        ladder.save(update_fields=["entrants", "is_public"])
        launched = tournament_launch(tournament=ladder)
    logger.info("%s: its %s ladder opened", competition, phase.name)
    return launched


def final_launch(*, competition: Competition) -> Tournament | None:
    """The final tournament, created with the final revisions of every team that is not
    disqualified (and the reference agents) and launched; None if it was launched already
    or cannot be (too few entries: the reason is kept as ``final_error``, for the
    organizers, who launch it by hand once mended)."""
    with transaction.atomic():
        # Its row held: of two managers at the deadline, one launches.
        locked = Competition.objects.select_for_update().get(pk=competition.pk)
        if locked.final_tournament_id is not None:
            return None
        try:
            with transaction.atomic():
                final = _final_created(locked)
        except ArenaError as error:
            locked.final_error = f"The final could not start: {error.message}."
            locked.save(update_fields=["final_error"])
            logger.warning("%s: %s", locked, locked.final_error)
            return None
        locked.final_tournament, locked.final_error = final, ""
        locked.save(update_fields=["final_tournament", "final_error"])
    logger.info("%s: its final launched (%s)", locked, final)
    competition.final_tournament, competition.final_error = final, ""
    return final


def _final_created(competition: Competition) -> Tournament:
    revisions: list[Revision] = []
    for team in competition.teams.filter(disqualified_at__isnull=True).order_by("name"):
        revisions += final_revisions(team)
    revisions += list(competition.reference_revisions.validated().select_related("competitor"))
    environment = competition.environment
    if len(revisions) < max(2, environment.players):
        raise ArenaError(
            f"it has {len(revisions)} final revision(s), and a tournament of "
            f"{environment.title} needs {max(2, environment.players)}"
        )
    ladder = competition.final_format == TournamentFormat.LADDER
    final = tournament_create(
        environment=environment,
        name=f"{competition.title}: final",
        revisions=revisions,
        matches_per_duel=competition.final_matches_per_duel,
        format=competition.final_format,
        rounds=competition.final_rounds,
    )
    final.is_public = not competition.final_hidden
    if ladder:
        if not competition.final_rounds:
            raise ArenaError("a final ladder needs its length: the duels it plays")
        final.open_entry, final.duels_limit = False, competition.final_rounds
    final.save(update_fields=["is_public", "open_entry", "duels_limit"])
    return tournament_launch(tournament=final)


def final_publish(*, competition: Competition) -> bool:
    """Publish the final's standings (its tournament made public): by itself when it
    ends, by the organizers when they held them out. Returns whether this call did."""
    final = competition.final_tournament
    if final is None or final.status != TournamentStatus.COMPLETED:
        raise ArenaError(
            f"the final of {competition.title} has not ended: its standings are published "
            "once it has"
        )
    with transaction.atomic():
        published = Competition.objects.filter(
            pk=competition.pk, final_published_at__isnull=True
        ).update(final_published_at=timezone.now())
        Tournament.objects.filter(pk=final.pk).update(is_public=True)
    competition.refresh_from_db()
    if published:
        logger.info("%s: its final standings published", competition)
    return bool(published)


def team_disqualify(*, team: Team, reason: str) -> None:
    """The organizers' decision: the team's agents are disabled (the tournament manager
    withdraws them from every ladder and tournament, the final included) and it plays no
    final."""
    with transaction.atomic():
        Team.objects.filter(pk=team.pk).update(
            disqualified_at=timezone.now(), disqualified_reason=reason[:200]
        )
        for competitor in team.competitors.all():
            competitor_disable(competitor=competitor, by=DisabledBy.ORGANIZERS)
    team.refresh_from_db()
