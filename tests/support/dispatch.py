"""``sent``: the tasks handed to the workers, recorded instead of started (a pytest plugin,
loaded by the root ``conftest.py`` when Django is installed)."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from core.jobs import dispatch


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(task, id) of every piece of work handed to the workers, once its transaction
    commits, as ``core.jobs.dispatch.start`` would start it; nothing runs."""
    started: list[tuple[str, int]] = []
    lock = threading.Lock()

    def start(path: str, **ids: int) -> None:
        [subject_id] = ids.values()  # a job's task takes its subject's id alone

        def record() -> None:
            with lock:
                started.append((path, subject_id))

        transaction.on_commit(record)

    monkeypatch.setattr(dispatch, "start", start)
    return started
