"""Settling a tournament: its progress counts and error brought in line with its duels,
its standings recomputed, and the tournament finished when nothing is left to play; what a
duel's end (or its failure, or its re-run) does to its tournament."""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from core.jobs.lifecycle import job_of, job_retry
from core.models import (
    Duel,
    DuelStatus,
    Job,
    JobKind,
    JobStatus,
    Participant,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tournament_manager.leaderboard import fit_due
from tournament_manager.ratings import ratings_update_from_duel
from tournament_manager.services.scheduling import ACTIVE
from tournament_manager.services.standings import standings_update

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class _Tally:
    """A tournament's duels counted by status, and what the stored counts should be."""

    total: int
    #: Not cancelled: what a ladder of a fixed length counts towards its end.
    scheduled: int
    done: int
    failed: int
    active: int
    players: int


def _tally(tournament: Tournament) -> _Tally:
    counts = dict(
        Duel.objects.filter(tournament=tournament)
        .order_by()
        .values_list("status")
        .annotate(count=Count("pk"))
    )
    players = tournament.participants.filter(withdrawn=False).count()
    scheduled = sum(count for status, count in counts.items() if status != DuelStatus.CANCELLED)
    total = scheduled
    if tournament.is_ladder:
        total = sum(counts.values())  # only grows: the matchmaking claim relies on it
    elif tournament.format == TournamentFormat.SWISS and tournament.status in (
        TournamentStatus.RUNNING,
        TournamentStatus.FAILED,
    ):
        rounds_left = max(0, (tournament.rounds or 0) - tournament.current_round)
        total += rounds_left * (players // 2)
    return _Tally(
        total=total,
        scheduled=scheduled,
        done=counts.get(DuelStatus.SUCCEEDED, 0),
        failed=counts.get(DuelStatus.FAILED, 0),
        active=sum(counts.get(status, 0) for status in ACTIVE),
        players=players,
    )


def _is_over(tournament: Tournament, tally: _Tally) -> bool:
    if tally.active:
        return False
    if tournament.is_ladder:  # until stopped, or its fixed length played
        return tournament.duels_limit is not None and tally.scheduled >= tournament.duels_limit
    if tournament.format == TournamentFormat.SWISS:
        return (
            bool(tally.failed)
            or tournament.current_round >= (tournament.rounds or 0)
            or tally.players < 2
        )
    return True


def _failure_note(tournament: Tournament, failed: int) -> str:
    if not failed:
        return ""
    note = f"{failed} duel(s) failed; re-run them from the admin"
    if tournament.format == TournamentFormat.SWISS:
        note += " (the next round waits for them)"
    return note


def _stored(tournament: Tournament, tally: _Tally) -> dict[str, object]:
    fields: dict[str, object] = {
        "duels_total": tally.total,
        "duels_done": tally.done,
        "duels_failed": tally.failed,
    }
    if tournament.status in (TournamentStatus.RUNNING, TournamentStatus.FAILED):
        fields["error"] = _failure_note(tournament, tally.failed)
    return fields


def _out_of_date(tournament: Tournament, tally: _Tally) -> bool:
    if any(
        getattr(tournament, name) != value for name, value in _stored(tournament, tally).items()
    ):
        return True
    return tournament.status == TournamentStatus.RUNNING and _is_over(tournament, tally)


def _ranking_due(tournament: Tournament, tally: _Tally, now: datetime) -> bool:
    """Whether a ladder's standings are to be computed again: duels ended since they were,
    and ``ARENA_LADDER_STANDINGS_SECONDS`` have passed, and ten times what computing them
    took last time (``fit_due``); at once when it is no longer running, for its final
    standings."""
    if not tournament.is_ladder or tournament.ranked_duels == tally.done:
        return False
    if tournament.status != TournamentStatus.RUNNING:
        return True
    return fit_due(
        tournament.ranked_at,
        tournament.ranking_seconds,
        settings.ARENA_LADDER_STANDINGS_SECONDS,
        now,
    )


def tournament_settle(
    *, tournament: Tournament, rerank: bool = False, rank_ladder: bool = True
) -> bool:
    """Bring the progress counts, the error and (when they changed, or ``rerank``) the
    standings in line with the duels, and finish a running tournament when nothing is
    left to play: completed, or failed if a duel failed. A ladder's standings are
    computed when ``rerank`` asks or they are due (``_ranking_due``) and ``rank_ladder``
    allows (not at a duel's end). Returns whether it changed anything besides the
    standings."""
    now = timezone.now()
    seen = Tournament.objects.get(pk=tournament.pk)
    seen_tally = _tally(tournament)
    if (
        not rerank
        and not _out_of_date(seen, seen_tally)
        and not (rank_ladder and _ranking_due(seen, seen_tally, now))
    ):
        return False  # the usual case, seen without taking the row lock
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        tally = _tally(locked)
        changed = _out_of_date(locked, tally)
        stored = _stored(locked, tally)
        if (
            (rerank or (rank_ladder and _ranking_due(locked, tally, now)))
            if locked.is_ladder
            else (changed or rerank)
        ):
            started = time.perf_counter()
            standings_update(tournament=locked)
            stored |= {
                "ranked_at": now,
                "ranked_duels": tally.done,
                "ranking_seconds": time.perf_counter() - started,
            }
        Tournament.objects.filter(pk=locked.pk).update(**stored)
        for name, value in stored.items():
            setattr(locked, name, value)
        if locked.status == TournamentStatus.RUNNING and _is_over(locked, tally):
            status = TournamentStatus.FAILED if tally.failed else TournamentStatus.COMPLETED
            now = timezone.now()
            if Tournament.objects.filter(pk=locked.pk, status=TournamentStatus.RUNNING).update(
                status=status, ended_at=now
            ):
                locked.status, locked.ended_at = status, now
                logger.info("%s: %s", locked, status.label.lower())
    for name in ("status", "ended_at", *stored):
        setattr(tournament, name, getattr(locked, name))
    return changed


def duel_rerun(*, duel: Duel) -> bool:
    """Queue a failed duel again (with fresh attempts) and start it. Returns whether this
    call did: its job must still be failed, so of two organizers clicking at once one
    re-runs it."""
    job = job_of(kind=JobKind.DUEL, subject_id=duel.pk)
    if job is None or job.status != JobStatus.FAILED:
        return False
    with transaction.atomic():
        if not job_retry(job=job):
            return False
        Duel.objects.filter(pk=duel.pk).update(error="", result="")
        if duel.tournament_id:
            Tournament.objects.filter(pk=duel.tournament_id, status=TournamentStatus.FAILED).update(
                status=TournamentStatus.RUNNING, ended_at=None
            )
            tournament_settle(tournament=Tournament.objects.get(pk=duel.tournament_id))
    return True


def duel_job_failed(*, job: Job) -> None:
    """A duel the watchdog gave up on (or whose agents no worker could prepare): an
    infrastructure failure, counted in its tournament's failed duels, never a result."""
    duel = Duel.objects.get(pk=job.duel_id)
    Duel.objects.filter(pk=duel.pk).update(result="")
    if duel.tournament_id is not None:
        duel.refresh_from_db()
        tournament_duel_finished(duel=duel)


def tournament_duel_finished(*, duel: Duel) -> None:
    """Rate a finished duel of a tournament, then recount, re-rank and maybe close the
    tournament. A ladder's entries count the duel (``Participant.duels_played``,
    ``last_duel_at``, which its matchmaking reads); its standings wait for the tournament
    manager (``ARENA_LADDER_STANDINGS_SECONDS``)."""
    assert duel.tournament_id is not None
    with transaction.atomic():
        # The tournament's row first, as every writer of it: duels finishing at once
        # queue up here rather than deadlock on their ratings.
        tournament = Tournament.objects.select_for_update().get(pk=duel.tournament_id)
        if duel.status == DuelStatus.SUCCEEDED:
            ratings_update_from_duel(duel=duel)
        if tournament.is_ladder:
            _ladder_entries_count(ladder=tournament, duel=duel)
        tournament_settle(tournament=tournament, rerank=not tournament.is_ladder, rank_ladder=False)


def _ladder_entries_count(*, ladder: Tournament, duel: Duel) -> None:
    """The duel in its players' entries: played to the end (a success), and when it
    ended (either way). Once per duel: its end is reported once."""
    # Its job ends in the transaction that reports it, after the report: now.
    ended = duel.played.ended_at or timezone.now()
    Participant.objects.filter(
        tournament=ladder, revision__in=[seat.revision_id for seat in duel.seats.all()]
    ).update(
        duels_played=F("duels_played") + (1 if duel.status == DuelStatus.SUCCEEDED else 0),
        last_duel_at=Greatest(Coalesce("last_duel_at", Value(ended)), Value(ended)),
    )
