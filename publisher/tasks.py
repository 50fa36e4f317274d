"""Celery entry points of the publisher: take ids, call one service, own the time limits."""

from __future__ import annotations

from celery import shared_task

from publisher import services

#: Every git command has its own limit; this bounds a run of several push attempts.
TIME_LIMIT_SECONDS = 31 * 60


@shared_task(
    name="publisher.tasks.publish_revision",
    soft_time_limit=TIME_LIMIT_SECONDS - 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def publish_revision(revision_id: int) -> None:
    # A failed push is given back while the job has attempts left
    # (ARENA_PUBLICATION_MAX_ATTEMPTS) and sent again by the watchdog after 1, 2, 4, 8...
    # minutes (``publisher.services.revision_publish``).
    services.revision_publish(revision_id=revision_id)
