"""The Celery app of pipeline tests that kill a worker in the middle of a build.

It is ``core``'s app, unchanged, except that with ``ARENA_TEST_SLOW_BUILD_SECONDS`` set each
build of a worker process waits that long after unpacking (where a real build downloads
and installs dependencies), so a test can kill the worker while the build runs. Start it
with ``celery_workers.start(name, app="tests.support.slow_app", ...)``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery.signals import worker_process_init

from core.celery import app

__all__ = ["app"]


@worker_process_init.connect
def slow_builds(**_: object) -> None:
    seconds = float(os.environ.get("ARENA_TEST_SLOW_BUILD_SECONDS", "0"))
    if not seconds:
        return
    from builder import services

    compile_errors = services._compile_errors

    def slowly(folder: Path) -> list[str]:
        time.sleep(seconds)
        return compile_errors(folder)

    services._compile_errors = slowly
