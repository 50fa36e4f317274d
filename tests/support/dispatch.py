"""``sent``: the tasks handed to the workers, recorded instead of started (a pytest plugin,
loaded by the root ``conftest.py`` when Django is installed)."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from core.jobs import dispatch


class Sent(list[tuple[str, int]]):
    """(task, id) of each piece of work sent, in order; ``queues`` says where each went
    (None: its task's route)."""

    def __init__(self) -> None:
        super().__init__()
        self.queues: dict[tuple[str, int], str | None] = {}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """(task, id) of every piece of work handed to the workers, once its transaction
    commits, as ``core.jobs.dispatch.start`` would start it; nothing runs."""
    started = Sent()
    lock = threading.Lock()

    def start(path: str, *, queue: str | None = None, **ids: int) -> None:
        [subject_id] = ids.values()  # a job's task takes its subject's id alone

        def record() -> None:
            with lock:
                started.append((path, subject_id))
                started.queues[(path, subject_id)] = queue

        transaction.on_commit(record)

    monkeypatch.setattr(dispatch, "start", start)
    return started
