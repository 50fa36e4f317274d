"""A worker started with ``--heartbeat FILE`` (``core/celery.py``) touches it over and
over while it consumes, so that its container's healthcheck (``python -m core.healthcheck
file``) sees it alive; the compose files' use of it: ``tests/deploy/test_compose.py``."""

from __future__ import annotations

import os
import time

import pytest

from core import healthcheck
from core.celery import HEARTBEAT_SECONDS
from tests.support.workers import Workers, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_worker_touches_its_heartbeat_while_it_consumes(celery_workers: Workers, tmp_path):
    beat = tmp_path / "heartbeat"
    celery_workers.start("beating", heartbeat=str(beat))

    wait_for(beat.exists, timeout=120, what="the worker's first heartbeat")
    # Made stale by hand: the worker touches it again by itself, at its own pace.
    stale = time.time() - 10 * HEARTBEAT_SECONDS
    os.utime(beat, (stale, stale))
    assert healthcheck.main(["file", str(beat), "60"]) == 1
    wait_for(
        lambda: beat.stat().st_mtime > stale + 1,
        timeout=120,
        what="the worker's next heartbeat",
    )
    assert healthcheck.main(["file", str(beat), "60"]) == 0
