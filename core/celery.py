"""The Celery app: queues ``build``, ``duels`` and ``publish``, JSON only, late acknowledgement.

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
# The apps are named, not imported: the project's Celery app knows where tasks live, and
# importing them is left to the worker (the apps sit above core, see ARCHITECTURE.md).
app.autodiscover_tasks(["builder", "duel_runner", "publisher"])
