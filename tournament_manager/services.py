"""Tournaments: creating, launching, following duels to the end, standings.

Round robin for now: every pair of participants plays one duel; 2 points for a duel
won, 1 for a draw; standings by points, then duel wins, then total match score, and
ties share a rank. The duels themselves are played by ``duel_runner.services``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core import dispatch
from core.errors import ArenaError
from core.models import (
    Duel,
    DuelResult,
    DuelStatus,
    Environment,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from tournament_manager.ratings import ratings_update_from_duel

SUPPORTED_FORMATS = (TournamentFormat.ROUND_ROBIN,)


def tournament_create(
    *,
    environment: Environment,
    name: str,
    revisions: Iterable[Revision],
    matches_per_duel: int | None = None,
    format: str = TournamentFormat.ROUND_ROBIN,
    created_by: User | None = None,
) -> Tournament:
    """A draft tournament with the given revisions (validated, one per competitor)."""
    if format not in SUPPORTED_FORMATS:
        raise ArenaError(f"the {format} format is not available yet; use round robin")
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
            matches_per_duel=matches_per_duel or environment.matches_per_duel,
            created_by=created_by,
        )
        Participant.objects.bulk_create(
            Participant(tournament=tournament, revision=revision) for revision in revisions
        )
    return tournament


def tournament_launch(*, tournament: Tournament) -> Tournament:
    """Draft to running: schedule one duel per pair of participants and start them."""
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if locked.status != TournamentStatus.DRAFT:
            raise ArenaError(f"{locked} is {locked.get_status_display().lower()}, not a draft")
        participants = list(
            locked.participants.filter(withdrawn=False).select_related("revision").order_by("pk")
        )
        if len(participants) < 2:
            raise ArenaError("a tournament needs at least two participants")
        seeds = random.SystemRandom()
        duels = Duel.objects.bulk_create(
            Duel(
                tournament=locked,
                revision_1=first.revision,
                revision_2=second.revision,
                num_matches=locked.matches_per_duel,
                seed=seeds.randrange(2**31),
            )
            for first, second in itertools.combinations(participants, 2)
        )
        locked.status = TournamentStatus.RUNNING
        locked.started_at = timezone.now()
        locked.duels_total = len(duels)
        locked.duels_done = locked.duels_failed = 0
        locked.save()
        for duel in Duel.objects.filter(tournament=locked).order_by("pk"):
            dispatch.start("duel_runner.tasks.play_duel", duel_id=duel.pk)
    return locked


def tournament_cancel(*, tournament: Tournament) -> None:
    with transaction.atomic():
        Duel.objects.filter(tournament=tournament, status=DuelStatus.QUEUED).update(
            status=DuelStatus.CANCELLED
        )
        Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.DRAFT, TournamentStatus.RUNNING]
        ).update(status=TournamentStatus.CANCELLED, ended_at=timezone.now())


def duel_rerun(*, duel: Duel) -> None:
    """Queue a failed duel again (its attempts are kept) and start it."""
    with transaction.atomic():
        updated = Duel.objects.filter(pk=duel.pk, status=DuelStatus.FAILED).update(
            status=DuelStatus.QUEUED, error="", ended_at=None
        )
        if not updated:
            raise ArenaError(f"duel {duel.pk} has not failed")
        if duel.tournament_id:
            Tournament.objects.filter(pk=duel.tournament_id).update(
                duels_failed=F("duels_failed") - 1
            )
            Tournament.objects.filter(pk=duel.tournament_id, status=TournamentStatus.FAILED).update(
                status=TournamentStatus.RUNNING, ended_at=None
            )
        dispatch.start("duel_runner.tasks.play_duel", duel_id=duel.pk)


def standings_update(*, tournament: Tournament) -> list[Participant]:
    """Recompute every participant's points, record and rank from its finished duels."""
    participants = {
        participant.revision_id: participant for participant in tournament.participants.all()
    }
    for participant in participants.values():
        participant.points = participant.wins = participant.losses = participant.draws = 0
        participant.score = 0.0
    duels = tournament.duels.filter(status=DuelStatus.SUCCEEDED)
    for duel in duels:
        one = participants.get(duel.revision_1_id)
        two = participants.get(duel.revision_2_id)
        if one is None or two is None:
            continue
        one.score += duel.player_1_score
        two.score += duel.player_2_score
        if duel.result == DuelResult.DRAW:
            one.draws += 1
            two.draws += 1
            one.points += 1
            two.points += 1
        else:
            winner, loser = (one, two) if duel.result == DuelResult.PLAYER_1_WIN else (two, one)
            winner.wins += 1
            winner.points += 2
            loser.losses += 1
    ordered = sorted(
        participants.values(), key=lambda p: (p.withdrawn, -p.points, -p.wins, -p.score)
    )
    rank, previous = 0, None
    for position, participant in enumerate(ordered, start=1):
        key = (participant.withdrawn, participant.points, participant.wins, participant.score)
        if key != previous:
            rank, previous = position, key
        participant.rank = rank
    Participant.objects.bulk_update(ordered, ["points", "wins", "losses", "draws", "score", "rank"])
    return ordered


def tournament_duel_finished(*, duel: Duel) -> None:
    """Count a finished duel in its tournament, rate it, and close the tournament when done."""
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=duel.tournament_id)
        if duel.status == DuelStatus.SUCCEEDED:
            tournament.duels_done = F("duels_done") + 1
            ratings_update_from_duel(duel=duel)
        elif duel.status == DuelStatus.FAILED:
            tournament.duels_failed = F("duels_failed") + 1
        tournament.save(update_fields=["duels_done", "duels_failed"])
        tournament.refresh_from_db()
        standings_update(tournament=tournament)
        if tournament.duels_done + tournament.duels_failed >= tournament.duels_total and (
            tournament.status == TournamentStatus.RUNNING
        ):
            tournament.status = (
                TournamentStatus.COMPLETED
                if not tournament.duels_failed
                else TournamentStatus.FAILED
            )
            tournament.error = (
                f"{tournament.duels_failed} duel(s) failed; re-run them from the admin"
                if tournament.duels_failed
                else ""
            )
            tournament.ended_at = timezone.now()
            tournament.save(update_fields=["status", "error", "ended_at"])
