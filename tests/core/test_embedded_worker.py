"""The embedded default's worker as its owner sees it (``core/embedded_worker.py``): one
that cannot start is given up on with the reason, and nothing of it is left running. Its
life inside ``run_gateway`` (restarted after a crash, stopped by Ctrl-C, gone with a
killed server) is tested in ``tests/edge/test_embedded_server.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.embedded_worker import QUICK_EXITS_ALLOWED, EmbeddedWorker
from tests.support.embedded import process_ids_with
from tests.support.workers import wait_for


def test_it_gives_up_on_a_worker_that_fails_as_it_starts_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A worker that cannot load the settings exits at once, every time.
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "no_such_settings")
    monkeypatch.setenv("ARENA_TEST_WORKER_OWNER", str(tmp_path))
    reports: list[str] = []
    worker = EmbeddedWorker(log_path=tmp_path / "worker.log", concurrency=1, report=reports.append)

    with worker:
        wait_for(lambda: worker.failure is not None, timeout=60, what="the worker to be given up")

    assert worker.failure is not None
    assert f"failed {QUICK_EXITS_ALLOWED} times in a row" in worker.failure
    assert "No module named 'no_such_settings'" in worker.failure  # the end of its log
    assert len(reports) == QUICK_EXITS_ALLOWED
    assert reports[-1] == worker.failure
    assert all("starting it again" in report for report in reports[:-1])
    assert (tmp_path / "worker.log").read_text().count(" started\n") == QUICK_EXITS_ALLOWED
    assert process_ids_with("ARENA_TEST_WORKER_OWNER", str(tmp_path)) == []


def test_it_reports_a_worker_it_cannot_start_at_once(tmp_path: Path):
    # A log that cannot be opened: no process can be started.
    (tmp_path / "worker.log").mkdir()
    reports: list[str] = []
    worker = EmbeddedWorker(log_path=tmp_path / "worker.log", concurrency=1, report=reports.append)

    with worker:
        assert worker.failure is not None
        assert worker.failure.startswith("The Celery worker could not be started:")
        assert "Is a directory" in worker.failure
        assert worker.pid is None
    assert reports == [worker.failure]
