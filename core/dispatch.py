"""Starting background work once the current transaction has committed.

The embedded default runs the work right after the commit, in this process; the
Celery pipeline (production) replaces ``start`` with a task on a queue. Work is
always named by a dotted path to a service and keyword arguments that are ids, so
both ways run the same services code.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)


def _resolve(path: str) -> Callable[..., object]:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def run(path: str, **ids: int) -> None:
    """Run a service now (what a worker does with a task)."""
    _resolve(path)(**ids)


def start(path: str, **ids: int) -> None:
    """Run the service ``path`` with ``ids`` once the current transaction commits.

    ``robust``: one failing piece of work is logged and does not stop the others
    queued by the same transaction (the duels of a tournament, say).
    """
    transaction.on_commit(lambda: run(path, **ids), robust=True)
