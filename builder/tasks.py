"""Celery entry points of the builder: take ids, call one service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from builder import services


@shared_task(
    name="builder.tasks.build_revision",
    soft_time_limit=settings.ARENA_BUILD_TIMEOUT_SECONDS,
    time_limit=settings.ARENA_BUILD_TIMEOUT_SECONDS + 30,
)
def build_revision(revision_id: int) -> None:
    services.revision_build(revision_id=revision_id)
