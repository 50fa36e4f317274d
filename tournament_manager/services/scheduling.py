"""A tournament's duels: created queued, their jobs queued to play them, and the queued
ones cancelled."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from django.db.models import QuerySet

from core.jobs.lifecycle import jobs_cancel, jobs_queue
from core.models import Duel, DuelStatus, Job, JobKind, Tournament

ACTIVE = (DuelStatus.QUEUED, DuelStatus.RUNNING)


def duels_create(
    tournament: Tournament,
    groups: Iterable[Sequence[int]],
    *,
    round_number: int | None = None,
) -> list[Duel]:
    """Queued duels between revisions (by id, player 1's first: two, or more in a game
    of more than two players); started by ``duels_start`` after the commit."""
    seeds = random.SystemRandom()
    groups = [tuple(group) for group in groups]
    return Duel.objects.bulk_seated(
        [
            Duel(
                tournament=tournament,
                environment_id=tournament.environment_id,
                round=round_number,
                num_matches=tournament.matches_per_duel,
                seed=seeds.randrange(2**31),
            )
            for _ in groups
        ],
        groups,
    )


def duels_start(duels: Sequence[Duel]) -> None:
    """Queue each duel's job; its task starts after the commit."""
    jobs_queue(kind=JobKind.DUEL, subject_ids=[duel.pk for duel in duels])


def duels_cancel_queued(duels: QuerySet[Duel], why: str) -> int:
    return jobs_cancel(jobs=Job.objects.filter(duel__in=duels), why=f"Not played: {why}.")


def ladder_duels_scheduled(ladder: Tournament) -> int:
    """The duels a ladder has scheduled and not cancelled: what a ladder of a fixed length
    (``Tournament.duels_limit``) counts towards its end."""
    return Duel.objects.filter(tournament=ladder).exclude(status=DuelStatus.CANCELLED).count()
