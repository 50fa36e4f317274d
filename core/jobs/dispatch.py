"""Starting background work once the current transaction has committed.

Work is a Celery task named by its dotted path, with ids as keyword arguments. It goes
to the task's queue on the broker (Redis in production, the embedded SQLite broker by
default) and a worker runs it; eagerly (``ARENA_BROKER_URL=eager``) Celery runs it in this
process. Either way it starts only after the commit, so the worker sees the rows the
caller wrote.
"""

from __future__ import annotations

import importlib

from celery import Task
from django.db import transaction


def task_named(path: str) -> Task:
    module, _, name = path.rpartition(".")
    task = getattr(importlib.import_module(module), name)
    if not isinstance(task, Task):
        raise TypeError(f"{path} is not a Celery task")
    return task


def start(path: str, *, queue: str | None = None, **ids: int) -> None:
    """Queue the task ``path`` with ``ids`` once the current transaction commits, on
    ``queue`` (by default the task's route, ``CELERY_TASK_ROUTES``).

    ``robust``: one failing piece of work (eagerly, or a broker that cannot be reached) is
    logged and does not stop the others queued by the same transaction (the duels of a
    tournament, say).
    """
    task = task_named(path)

    def send() -> None:
        if queue is None:
            task.apply_async(kwargs=ids)
        else:
            task.apply_async(kwargs=ids, queue=queue)

    transaction.on_commit(send, robust=True)
