"""The Celery app of pipeline tests that kill a worker in the middle of a job.

It is ``core``'s app, unchanged, except that with ``ARENA_TEST_SLOW_JOB=<kind>:<seconds>``
each job of that kind (build, validation, publication, duel, evaluation) that a worker
process claims waits that long once its heartbeat runs, before its work: the worker holds
the job, renewing its lease, as one busy with a long build or duel does, so a test can
kill it midway. Start it with ``celery_workers.start(name, app="tests.support.slow_app",
ARENA_TEST_SLOW_JOB="build:60", ...)``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Iterator

from celery.signals import worker_process_init

from core.celery import app

__all__ = ["app"]

#: The modules whose workers hold a job with ``core.jobs.job_heartbeat``.
HOLDERS = (
    "builder.services",
    "duel_runner.validation",
    "duel_runner.services",
    "duel_runner.evaluations",
    "publisher.services",
)


@worker_process_init.connect
def slow_jobs(**_: object) -> None:
    kind, _, seconds = os.environ.get("ARENA_TEST_SLOW_JOB", "").partition(":")
    if not kind:
        return
    from core import jobs

    heartbeat = jobs.job_heartbeat

    @contextlib.contextmanager
    def slowly(job: jobs.Job, *, worker: str) -> Iterator[None]:
        with heartbeat(job, worker=worker):
            if job.kind == kind:
                time.sleep(float(seconds))
            yield

    for name in HOLDERS:
        importlib.import_module(name).job_heartbeat = slowly  # type: ignore[attr-defined]
