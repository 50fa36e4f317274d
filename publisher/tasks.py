"""Celery entry points of the publisher: take ids, call one service, own retries and limits."""

from __future__ import annotations

from celery import Task, shared_task

from publisher import services

#: Every git command has its own limit; this bounds a run of several push attempts.
TIME_LIMIT_SECONDS = 31 * 60


@shared_task(
    bind=True,
    name="publisher.tasks.publish_revision",
    max_retries=None,
    soft_time_limit=TIME_LIMIT_SECONDS - 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def publish_revision(self: Task[[int], None], revision_id: int) -> None:
    # Eagerly (ARENA_BROKER_URL=eager) nothing would come back later: one attempt, then
    # failed or not. A worker's job is given back while it has attempts left
    # (ARENA_PUBLICATION_MAX_ATTEMPTS), and this comes back after 1, 2, 4, 8... minutes.
    again = not self.request.is_eager
    wait = services.revision_publish(revision_id=revision_id, again=again)
    if wait is not None:
        raise self.retry(countdown=wait)
