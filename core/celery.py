"""The Celery app: queues ``build``, ``duels``, ``online`` and ``publish``, JSON only, late
acknowledgement.

The broker is Redis in production and, with ``ARENA_BROKER_URL`` unset (the embedded
default), a SQLite file (``core/embedded_broker.py``) served by a worker that
``run_gateway`` and the ``demo`` command start (``core/embedded_worker.py``): the same
tasks, queues and workers either way. ``ARENA_BROKER_URL=eager`` runs each task in the
calling process right after the transaction that started it commits (the tests).
"""

from __future__ import annotations

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

# The embedded broker's scheme (``CELERY_BROKER_URL`` in the settings), by name: kombu
# imports the transport, and SQLAlchemy, only when a connection first needs it.
TRANSPORT_ALIASES["arena-sqlite"] = "core.embedded_broker:Transport"

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The apps are named, not imported: the project's Celery app knows where tasks live, and
# importing them is left to the worker (the apps sit above core, see
# docs/developers/architecture.md).
app.autodiscover_tasks(["builder", "duel_runner", "publisher"])
