"""Refereeing online duels inside the gateway's process (the embedded default).

With the seat bus in memory, only the process that holds the clients' connections can
referee their duels. ``OnlineDuelRunner`` takes them up there: duels handed to it by the
tasks of this process, and any other online duel it finds queued (by another process,
such as the tournament manager's, or the embedded broker's worker, which cannot reach
this bus) or left with an expired lease, each played in a thread of its own. With tasks
run eagerly (``ARENA_BROKER_URL=eager``), duels with an LLM seat dispatched in this
process are handed to it too (``duel_runner.services.llm_duel_play``): they wait on a
model's server for minutes.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading

from django.db import close_old_connections, connection

from core.models import Duel, Job
from core.online import LOCAL_REFEREE
from duel_runner.services import duel_play

logger = logging.getLogger(__name__)


class OnlineDuelRunner:
    def __init__(self, *, concurrency: int, poll_seconds: float = 0.5) -> None:
        self.poll_seconds = poll_seconds
        self._pool = concurrent.futures.ThreadPoolExecutor(
            concurrency, thread_name_prefix="online-duel"
        )
        self._playing: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="online-duels", daemon=True)

    def start(self) -> None:
        LOCAL_REFEREE.submit = self.submit
        self._poller.start()

    def stop(self) -> None:
        LOCAL_REFEREE.submit = None
        self._stop.set()
        self._poller.join(timeout=5)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, duel_id: int) -> bool:
        """Play the duel in a thread of the pool, unless it is being played here."""
        with self._lock:
            if duel_id in self._playing or self._stop.is_set():
                return False
            self._playing.add(duel_id)
        self._pool.submit(self._play, duel_id)
        return True

    def _play(self, duel_id: int) -> None:
        try:
            duel_play(duel_id=duel_id)
        except Exception:
            logger.exception("online duel %s failed to run", duel_id)
        finally:
            connection.close()
            with self._lock:
                self._playing.discard(duel_id)

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                close_old_connections()
                # Queued ones, and any whose referee here stopped renewing its lease.
                queued = list(
                    Duel.objects.filter(job__in=Job.objects.claimable())
                    .with_online_seat()
                    .order_by("pk")
                    .values_list("pk", flat=True)[:200]
                )
            except Exception:
                logger.exception("could not look for queued online duels")
                continue
            for duel_id in queued:
                self.submit(duel_id)
        connection.close()
