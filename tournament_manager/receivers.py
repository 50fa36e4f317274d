"""What the tournament manager does when another app reports something (``core.jobs.signals``).

The settlement's services (the leaderboard's fit with NumPy, openskill) are imported when a
signal comes, not at the start of every process that has the app (a web process, a
gateway, each ``manage.py`` command)."""

from __future__ import annotations

from django.dispatch import receiver

from core.jobs.signals import duel_finished, job_failed
from core.models import Duel, Job, JobKind


@receiver(duel_finished, dispatch_uid="tournament_manager.duel_finished")
def rate_and_settle(*, duel: Duel, **_: object) -> None:
    if duel.tournament_id is not None:
        from tournament_manager.services.settlement import tournament_duel_finished

        tournament_duel_finished(duel=duel)


@receiver(job_failed, dispatch_uid="tournament_manager.job_failed")
def count_failed_duel(*, job: Job, **_: object) -> None:
    if job.kind == JobKind.DUEL:
        from tournament_manager.services.settlement import duel_job_failed

        duel_job_failed(job=job)
