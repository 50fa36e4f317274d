"""Leases on work a worker holds: who it is, and a heartbeat that renews the lease.

A worker claims a row (a duel, a revision's build or validation) with a conditional
UPDATE that names it as the lease's owner and sets when the lease runs out. While the
work runs, a ``Heartbeat`` thread pushes that time forward. A worker that dies stops
renewing, so its lease runs out and the work can be taken over; a worker that lost its
lease cannot record a result, since recording is conditional on owning the lease.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import F, QuerySet
from django.utils import timezone

logger = logging.getLogger(__name__)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Heartbeat:
    """Calls ``renew`` every ``interval`` seconds from a thread, until the block ends."""

    def __init__(self, renew: Callable[[], object], *, interval: float) -> None:
        self.renew = renew
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    self.renew()
                except DatabaseError:
                    # A lost connection: try again next beat with a new one. Should the
                    # lease run out meanwhile, the work is taken over, and this worker's
                    # outcome is not recorded.
                    logger.warning("could not renew a lease; trying again", exc_info=True)
                    connection.close()
        finally:
            # The thread had its own database connection; leave none open behind it.
            connection.close()

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopped.set()
        self.thread.join()


def lease_claim(claimable: QuerySet[Any], *, worker: str) -> bool:
    """Claim the row of ``claimable`` (a duel or an evaluation that is queued or whose lease
    ran out) for ``worker``: running, under a lease of ``ARENA_DUEL_LEASE_SECONDS``, one
    more attempt. False when another worker claimed it first."""
    now = timezone.now()
    return bool(
        claimable.update(
            status="running",
            lease_owner=worker,
            lease_expires_at=now + timedelta(seconds=settings.ARENA_DUEL_LEASE_SECONDS),
            attempts=F("attempts") + 1,
            started_at=now,
        )
    )


def lease_give_back(held: QuerySet[Any], *, error: str) -> bool:
    """Queue the row of ``held`` (the row while its worker still owns it) again for
    another worker, with ``error`` saying why this attempt did not play it; it is sent
    again if its queue message is lost. False when the worker no longer held it."""
    from core.models.submissions import resend_at_default

    return bool(
        held.update(
            status="queued",
            lease_owner="",
            lease_expires_at=None,
            error=error[:10_000],
            resend_at=resend_at_default(),
        )
    )


def lease_heartbeat(held: QuerySet[Any]) -> Heartbeat:
    """Renews the lease on ``held`` (the row while its worker still owns it) from a thread.

    A worker that dies stops renewing, so its lease runs out and another worker may take
    the work over; a live worker keeps it however long the work takes.
    """
    lease = settings.ARENA_DUEL_LEASE_SECONDS

    def renew() -> None:
        held.update(lease_expires_at=timezone.now() + timedelta(seconds=lease))

    return Heartbeat(renew, interval=lease / 3)
