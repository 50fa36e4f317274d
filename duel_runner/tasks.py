"""Celery entry points of the duel runner: take ids, call one service, own the time limits."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_process_shutdown, worker_ready
from django.conf import settings

from core.models import JobKind
from duel_runner import online, services, validation

logger = logging.getLogger(__name__)


def job_task(name: str) -> Any:
    """A job's Celery task, within a duel's time. It only runs its job: a job that must be
    tried again later is queued again by its worker with a re-send time, and the watchdog
    sends it (``core.jobs.worker``), never Celery's own retries."""
    return shared_task(
        name=name,
        soft_time_limit=settings.ARENA_DUEL_TIMEOUT_SECONDS,
        time_limit=settings.ARENA_DUEL_TIMEOUT_SECONDS + 30,
    )


@job_task("duel_runner.tasks.validate_revision")
def validate_revision(revision_id: int) -> None:
    validation.revision_validate(revision_id=revision_id)


@job_task("duel_runner.tasks.play_duel")
def play_duel(duel_id: int) -> None:
    """A duel, on the queue its job was sent to: ``duels``, or the network queue's threads
    for one with a seat that waits on the network (``core.jobs.policies``)."""
    online.game_play(kind=JobKind.DUEL, subject_id=duel_id)


@job_task("duel_runner.tasks.play_evaluation")
def play_evaluation(evaluation_id: int) -> None:
    """One agent on a score competition's seeded episodes, queued as its duels are."""
    online.game_play(kind=JobKind.EVALUATION, subject_id=evaluation_id)


@worker_ready.connect
def sweep_orphaned_agents(**_: object) -> None:
    """A worker that was killed leaves its agents' containers behind: remove them first."""
    if settings.ARENA_SANDBOX != "docker":
        return
    removed = services.sandbox_backend().sweep_orphans()  # type: ignore[attr-defined]
    if removed:
        logger.warning("removed %d orphaned sandbox leftovers: %s", len(removed), removed)


@worker_process_shutdown.connect
def close_sandboxes(**_: object) -> None:
    """A pool process that stops kills the agents it started ahead and waits for its
    removals: prefork processes exit without running ``atexit``, which would leave
    containers to the next worker's sweep (or, on a machine whose workers are gone, for
    ever); the process sandbox's agents would end only once they read the end of their
    input."""
    services.sandbox_backend_close()
