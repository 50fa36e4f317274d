"""Leases on work a worker holds: who it is, and a heartbeat that renews the lease.

A worker claims a job (``core.jobs``) or a revision's build or validation with a
conditional UPDATE that names it as the lease's owner and sets when the lease runs out. While the
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

from django.db import DatabaseError, connection

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
