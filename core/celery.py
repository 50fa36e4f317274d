"""The Celery app: queues ``build``, ``duels`` and ``publish``, JSON only, late acknowledgement.

With ``ARENA_BROKER_URL`` unset (the embedded default) tasks run in the calling
process, right after the transaction that started them commits, so the same
services run without Redis or a worker.
"""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

logger = logging.getLogger(__name__)

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["builder", "duel_runner", "publisher"])


@worker_ready.connect
def sweep_orphaned_agents(**_: object) -> None:
    """A worker that was killed leaves its agents' containers behind: remove them first."""
    from django.conf import settings

    if settings.ARENA_SANDBOX != "docker":
        return
    from duel_runner.services import sandbox_backend

    removed = sandbox_backend().sweep_orphans()  # type: ignore[attr-defined]
    if removed:
        logger.warning("removed %d orphaned sandbox leftovers: %s", len(removed), removed)
