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
from pathlib import Path
from typing import Any

from celery import Celery, bootsteps
from celery.signals import task_prerun
from click import Option
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")
# A worker starts without Django's system checks. Celery's Django fix-up runs them all at
# start and throws their messages away (arena.W001 reaches the operator through
# ``migrate``, ``check``, the demo and the admin's home); the URL checks alone import the
# site, the API and the admin, which no task uses: 1.2 s of CPU of a worker's 2.7 at each
# start (docs/developers/testing.md, "Where the suite's time goes").
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

# The embedded broker's scheme (``CELERY_BROKER_URL`` in the settings), by name: kombu
# imports the transport, and SQLAlchemy, only when a connection first needs it.
TRANSPORT_ALIASES["arena-sqlite"] = "core.embedded_broker:Transport"

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The apps are named, not imported: the project's Celery app knows where tasks live, and
# importing them is left to the worker (the apps sit above core, see
# docs/developers/architecture.md).
app.autodiscover_tasks(["builder", "duel_runner", "publisher"])

#: How often a worker started with ``--heartbeat FILE`` touches it.
HEARTBEAT_SECONDS = 10.0


class Heartbeat(bootsteps.StartStopStep):
    """``celery worker --heartbeat FILE``: touches FILE every ``HEARTBEAT_SECONDS`` while
    the worker consumes from its broker, from the consumer's own loop, so the file goes
    stale when the broker is lost or the loop stops turning. The containers' healthcheck
    reads its age (``python -m core.healthcheck file FILE SECONDS``), as the daemons'
    ``--heartbeat``: about 50 ms of CPU a check, where asking the worker over the broker
    (``celery inspect ping``) started Celery and Django for a second of CPU each time."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, heartbeat: str | None = None, **options: Any) -> None:
        super().__init__(parent, **options)
        self.path = Path(heartbeat) if heartbeat else None
        self.entry: Any = None

    def start(self, parent: Any) -> None:
        if self.path is None:
            return
        self.path.touch()
        self.entry = parent.timer.call_repeatedly(HEARTBEAT_SECONDS, self.path.touch)

    def stop(self, parent: Any) -> None:
        if self.entry is not None:
            self.entry.cancel()
            self.entry = None


app.user_options["worker"].add(
    Option(
        ("--heartbeat",),
        default=None,
        help=f"Touch this file every {HEARTBEAT_SECONDS:.0f} s while consuming "
        "(python -m core.healthcheck file).",
    )
)
app.steps["consumer"].add(Heartbeat)


def forget_statements() -> None:
    """Forget the SQL this thread's connections logged, as Django does when a request
    starts. With ``ARENA_DEBUG`` on (the embedded default) each connection keeps its last
    9,000 statements, about 12 MB, until then; a worker's task and a daemon's pass are
    what a request is to the site, and nothing else clears them. A connection whose
    statements are being captured (a test counting queries) keeps them."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        if not connection.force_debug_cursor:
            connection.queries_log.clear()


@task_prerun.connect
def _forget_statements_before_a_task(**_signal: Any) -> None:
    forget_statements()
