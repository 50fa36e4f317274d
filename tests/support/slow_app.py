"""The Celery app of pipeline tests that kill a worker in the middle of a job.

It is ``core``'s app, unchanged, except that with ``ARENA_TEST_SLOW_JOB=<kind>:<seconds>``
a step inside each job of that kind waits that long in a worker process, where the real
work takes its time: a build after unpacking the upload (where a real one downloads and
installs dependencies), a publication before pushing. The worker holds the job
meanwhile, renewing its lease, so a test can kill it midway. Start it with
``celery_workers.start(name, app="tests.support.slow_app", ARENA_TEST_SLOW_JOB="build:60")``.
(A duel, an evaluation or a validation is slow by its own work: many matches, a
slow-starting agent.)
"""

from __future__ import annotations

import functools
import importlib
import os
import time
from collections.abc import Callable
from typing import Any

from celery.signals import worker_process_init

from core.celery import app

__all__ = ["app"]

#: Where each kind of job is held up: (module, function).
SLOW_STEPS = {
    "build": ("builder.services", "_compile_errors"),
    "publication": ("publisher.services", "_publish"),
}


@worker_process_init.connect
def slow_jobs(**_: object) -> None:
    kind, _colon, seconds = os.environ.get("ARENA_TEST_SLOW_JOB", "").partition(":")
    if not kind:
        return
    module_name, name = SLOW_STEPS[kind]
    module = importlib.import_module(module_name)
    step: Callable[..., Any] = getattr(module, name)

    @functools.wraps(step)
    def slowly(*args: Any, **kwargs: Any) -> Any:
        time.sleep(float(seconds))
        return step(*args, **kwargs)

    setattr(module, name, slowly)
