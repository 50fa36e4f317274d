"""Celery entry points of the builder: take ids, call one service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from builder import services
from builder.requirements import wheel_cache_prune

logger = logging.getLogger(__name__)


@shared_task(
    name="builder.tasks.build_revision",
    # Longer than the build's own deadline, which fails the build cleanly first.
    soft_time_limit=settings.ARENA_BUILD_TIMEOUT_SECONDS + 30,
    time_limit=settings.ARENA_BUILD_TIMEOUT_SECONDS + 60,
)
def build_revision(revision_id: int) -> None:
    services.revision_build(revision_id=revision_id)


@shared_task(name="builder.tasks.prune_revision_images", soft_time_limit=600, time_limit=660)
def prune_revision_images() -> None:
    """Periodic (``CELERY_BEAT_SCHEDULE``): images and wheels no revision needs any more."""
    if settings.ARENA_SANDBOX != "docker":
        return
    for pruned in services.revision_images_prune():
        logger.info("revision image %s: %s", pruned.image, pruned.reason)
    wheel_cache_prune()
