"""The Celery app: queues ``build`` and ``duels``, JSON only, late acknowledgement.

With ``ARENA_BROKER_URL`` unset (the embedded default) tasks run in the calling
process, right after the transaction that started them commits, so the same
services run without Redis or a worker.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["builder", "duel_runner"])
