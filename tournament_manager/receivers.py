"""What the tournament manager does when another app reports something (``core.jobs.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from core.jobs.signals import duel_finished, job_failed
from core.models import Duel, Job, JobKind
from tournament_manager.services.settlement import duel_job_failed, tournament_duel_finished


@receiver(duel_finished, dispatch_uid="tournament_manager.duel_finished")
def rate_and_settle(*, duel: Duel, **_: object) -> None:
    if duel.tournament_id is not None:
        tournament_duel_finished(duel=duel)


@receiver(job_failed, dispatch_uid="tournament_manager.job_failed")
def count_failed_duel(*, job: Job, **_: object) -> None:
    if job.kind == JobKind.DUEL:
        duel_job_failed(job=job)
