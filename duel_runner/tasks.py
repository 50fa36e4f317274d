"""Celery entry points of the duel runner: take ids, call one service, own retries and limits."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.signals import worker_process_shutdown, worker_ready
from django.conf import settings

from core.models import JobKind
from duel_runner import evaluations, online, services, validation

logger = logging.getLogger(__name__)


def job_task(name: str) -> Any:
    """A job's Celery task, bound (for its retries), within a duel's time, retried for as
    long as its job waits on another worker or host."""
    return shared_task(
        bind=True,
        name=name,
        soft_time_limit=settings.ARENA_DUEL_TIMEOUT_SECONDS,
        time_limit=settings.ARENA_DUEL_TIMEOUT_SECONDS + 30,
        max_retries=None,
    )


def _again_after(task: Task[[int], None], wait: float | None) -> None:
    """Queue the job again in ``wait`` seconds when its service asks: another worker holds
    its lease (a redelivered message), or this host could not build an agent (any worker
    may try). Never when run eagerly, where nothing would take it up."""
    if wait is not None and not task.request.is_eager:
        raise task.retry(countdown=wait)


@job_task("duel_runner.tasks.validate_revision")
def validate_revision(self: Task[[int], None], revision_id: int) -> None:
    _again_after(self, validation.revision_validate(revision_id=revision_id))


@job_task("duel_runner.tasks.play_duel")
def play_duel(self: Task[[int], None], duel_id: int) -> None:
    _again_after(self, services.duel_play(duel_id=duel_id))


@job_task("duel_runner.tasks.play_online_duel")
def play_online_duel(self: Task[[int], None], duel_id: int) -> None:
    """A duel with an online seat: mostly waiting on the network, so it runs on the
    ``online`` queue, whose workers run many at once in threads (``-P threads``)."""
    _again_after(self, online.online_play(kind=JobKind.DUEL, subject_id=duel_id))


@job_task("duel_runner.tasks.play_llm_duel")
def play_llm_duel(self: Task[[int], None], duel_id: int) -> None:
    """A duel with an LLM seat (and no online one): mostly waiting on the model's server,
    so it runs on the ``online`` queue's threads rather than holding a prefork worker."""
    _again_after(self, online.llm_play(kind=JobKind.DUEL, subject_id=duel_id))


@job_task("duel_runner.tasks.play_evaluation")
def play_evaluation(self: Task[[int], None], evaluation_id: int) -> None:
    """One agent on a score competition's seeded episodes, on the ``duels`` queue."""
    _again_after(self, evaluations.evaluation_play(evaluation_id=evaluation_id))


@job_task("duel_runner.tasks.play_online_evaluation")
def play_online_evaluation(self: Task[[int], None], evaluation_id: int) -> None:
    """An online agent's evaluation: where its seat bus is reached, on the ``online``
    queue's threads, as its duels are."""
    _again_after(self, online.online_play(kind=JobKind.EVALUATION, subject_id=evaluation_id))


@job_task("duel_runner.tasks.play_llm_evaluation")
def play_llm_evaluation(self: Task[[int], None], evaluation_id: int) -> None:
    """An LLM player's evaluation: on the ``online`` queue's threads, as its duels are."""
    _again_after(self, online.llm_play(kind=JobKind.EVALUATION, subject_id=evaluation_id))


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
