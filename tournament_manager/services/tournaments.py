"""A tournament's lifecycle: created as a draft, scheduled, launched, cancelled or stopped."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import ArenaError
from core.models import (
    Duel,
    Environment,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.services.online import running_ladders
from tournament_manager.services.ladder import ladder_refresh_entries
from tournament_manager.services.round_robin import round_robin_groups
from tournament_manager.services.scheduling import duels_cancel_queued, duels_create, duels_start
from tournament_manager.services.settlement import tournament_settle
from tournament_manager.services.swiss import swiss_first_round

SUPPORTED_FORMATS = (
    TournamentFormat.ROUND_ROBIN,
    TournamentFormat.SWISS,
    TournamentFormat.LADDER,
)


def tournament_create(
    *,
    environment: Environment,
    name: str,
    revisions: Iterable[Revision],
    matches_per_duel: int | None = None,
    format: str = TournamentFormat.ROUND_ROBIN,
    rounds: int | None = None,
    created_by: User | None = None,
) -> Tournament:
    """A draft tournament with the given revisions (validated, one per competitor).

    A ladder may start with none: the newest validated revision of every competitor
    joins when it is launched, and every one validated later joins while it runs.
    """
    if environment.players < 2:
        raise ArenaError(
            f"{environment.title} is a one-player game: its agents are ranked by a score "
            "competition, not a tournament"
        )
    if format not in SUPPORTED_FORMATS:
        raise ArenaError(
            f"unknown tournament format {format!r}; choose one of "
            + ", ".join(str(choice) for choice in SUPPORTED_FORMATS)
        )
    if format == TournamentFormat.SWISS and not rounds:
        raise ArenaError("a Swiss tournament needs a number of rounds (1 or more)")
    if format == TournamentFormat.SWISS and environment.players > 2:
        raise ArenaError(
            f"Swiss pairs two players, and {environment} seats {environment.players}: "
            "play it as a round robin or a ladder"
        )
    revisions = list(revisions)
    competitors = [revision.competitor_id for revision in revisions]
    if len(set(competitors)) != len(competitors):
        raise ArenaError("a competitor may enter a tournament with one revision only")
    for revision in revisions:
        if revision.competitor.environment_id != environment.pk:
            raise ArenaError(
                f"{revision} plays {revision.competitor.environment}, not {environment}"
            )
        if not revision.is_valid:
            raise ArenaError(f"{revision} is not validated")
    with transaction.atomic():
        tournament = Tournament.objects.create(
            environment=environment,
            name=name,
            format=format,
            rounds=rounds if format == TournamentFormat.SWISS else None,
            matches_per_duel=matches_per_duel
            or (
                environment.ladder_matches_per_duel
                if format == TournamentFormat.LADDER
                else environment.matches_per_duel
            ),
            created_by=created_by,
        )
        Participant.objects.bulk_create(
            Participant(tournament=tournament, revision=revision) for revision in revisions
        )
    return tournament


def tournament_schedule(*, tournament: Tournament, starts_at: datetime | None) -> None:
    """Have the tournament manager launch the draft at ``starts_at`` (None: not by itself)."""
    updated = Tournament.objects.filter(pk=tournament.pk, status=TournamentStatus.DRAFT).update(
        starts_at=starts_at, error=""
    )
    if not updated:
        raise ArenaError(f"{tournament} is not a draft any more; only drafts are scheduled")
    tournament.starts_at = starts_at
    tournament.error = ""


def tournament_launch(*, tournament: Tournament) -> Tournament:
    """Draft to running, and its first duels: every pair (round robin), round 1 (Swiss),
    or none yet for a ladder, whose agents the tournament manager pairs as it goes.

    The draft is claimed with a conditional UPDATE: of two tournament managers (or a
    manager and an organizer) launching it at once, one does, the other gets an error.
    """
    with transaction.atomic():
        claimed = Tournament.objects.filter(pk=tournament.pk, status=TournamentStatus.DRAFT).update(
            status=TournamentStatus.RUNNING,
            started_at=timezone.now(),
            ended_at=None,
            error="",
            current_round=0,
            duels_total=0,
            duels_done=0,
            duels_failed=0,
        )
        launched = Tournament.objects.select_related("environment").get(pk=tournament.pk)
        if not claimed:
            raise ArenaError(f"{launched} is {launched.get_status_display().lower()}, not a draft")
        launched.participants.exclude(revision__in=Revision.objects.validated()).update(
            withdrawn=True
        )
        duels: list[Duel] = []
        if launched.is_ladder:
            ladder_refresh_entries(tournament=launched)
        else:
            participants = list(
                launched.participants.filter(withdrawn=False)
                .select_related("revision")
                .order_by("pk")
            )
            seats = launched.environment.players
            if len(participants) < 2:
                raise ArenaError("a tournament needs at least two participants")
            if len(participants) < seats:
                raise ArenaError(
                    f"a tournament of {launched.environment} needs at least {seats} participants"
                )
            if launched.format == TournamentFormat.SWISS:
                if seats > 2:
                    raise ArenaError(
                        f"Swiss pairs two players, and {launched.environment} seats {seats}"
                    )
                duels = swiss_first_round(launched, participants)
            else:
                duels = duels_create(
                    launched, round_robin_groups([p.revision_id for p in participants], seats)
                )
        tournament_settle(tournament=launched, rerank=True)
        duels_start(duels)
    launched.refresh_from_db()
    return launched


def ladder_open(
    *,
    environment: Environment,
    name: str,
    matches_per_duel: int | None = None,
    standing: bool = False,
) -> Tournament | None:
    """A ladder of ``environment``, created empty and launched (the newest validated
    revision of every competitor joins it, and every one validated later), unless one is
    running already: then None. ``standing``: the environment's standing ladder
    (``tournament_manager.services.standing``)."""
    with transaction.atomic():
        # The game's row held: of two managers opening its ladder at once, one does.
        Environment.objects.select_for_update().get(pk=environment.pk)
        if running_ladders(environment):
            return None
        ladder = tournament_create(
            environment=environment,
            name=name,
            revisions=[],
            format=TournamentFormat.LADDER,
            matches_per_duel=matches_per_duel,
        )
        if standing:
            ladder.is_standing = True
            ladder.save(update_fields=["is_standing"])
        return tournament_launch(tournament=ladder)


def tournament_cancel(*, tournament: Tournament) -> bool:
    """Stop a draft or a running tournament: queued duels are not played. Returns whether
    this call cancelled it (of two organizers clicking at once, one does)."""
    with transaction.atomic():
        cancelled = Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.DRAFT, TournamentStatus.RUNNING]
        ).update(status=TournamentStatus.CANCELLED, ended_at=timezone.now())
        if cancelled:
            duels_cancel_queued(Duel.objects.filter(tournament=tournament), "cancelled")
            tournament_settle(tournament=tournament)
            _standing_closed(tournament)
    return bool(cancelled)


def tournament_stop(*, tournament: Tournament) -> None:
    """End a running ladder as completed: its queued duels are not played; the running
    ones finish and are rated."""
    if not tournament.is_ladder:
        raise ArenaError("only a ladder is stopped; cancel a round robin or Swiss tournament")
    with transaction.atomic():
        stopped = Tournament.objects.filter(
            pk=tournament.pk, status=TournamentStatus.RUNNING
        ).update(status=TournamentStatus.COMPLETED, ended_at=timezone.now())
        if not stopped:
            raise ArenaError(f"{tournament} is not running")
        duels_cancel_queued(Duel.objects.filter(tournament=tournament), "the ladder stopped")
        tournament_settle(tournament=tournament, rerank=True)
        _standing_closed(tournament)


def _standing_closed(tournament: Tournament) -> None:
    """An organizer who stops or cancels a standing ladder closes the game's standing
    competition, which the tournament manager would otherwise open again at once."""
    if tournament.is_standing:
        Environment.objects.filter(pk=tournament.environment_id).update(standing_competition=False)
