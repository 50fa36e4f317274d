"""Celery entry points of the publisher: take ids, call one service, own retries and limits."""

from __future__ import annotations

from celery import shared_task

from publisher import services
from publisher.services import PublishError

#: Attempts after the first before a publication shows failed.
MAX_RETRIES = 5
#: Every git command has its own limit; this bounds a run of several push attempts. A
#: publication running longer than this was abandoned by a killed worker.
TIME_LIMIT_SECONDS = 31 * 60


@shared_task(
    bind=True,
    name="publisher.tasks.publish_revision",
    max_retries=MAX_RETRIES,
    soft_time_limit=TIME_LIMIT_SECONDS - 60,
    time_limit=TIME_LIMIT_SECONDS,
)
def publish_revision(self, revision_id: int) -> None:  # type: ignore[no-untyped-def]
    # Eagerly (ARENA_BROKER_URL=eager) nothing would come back later: one attempt, then
    # failed or not.
    retries_left = 0 if self.request.is_eager else MAX_RETRIES - self.request.retries
    try:
        services.revision_publish(revision_id=revision_id, retries_left=retries_left)
    except PublishError as error:
        # The service queued the step again; come back after 1, 2, 4, 8 then 16 minutes.
        raise self.retry(exc=error, countdown=60 * 2**self.request.retries) from None
