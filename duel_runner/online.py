"""Refereeing games with a seat on the network: online duels and evaluations inside the
gateway's process (the embedded default), and where duels and evaluations that wait on
the network (an online agent's, an LLM player's) are played.

With the seat bus in memory, only the process that holds the clients' connections can
referee their games. ``OnlineDuelRunner`` takes them up there: duels and evaluations
handed to it by the tasks of this process, and any other one with an online seat it
finds queued (by another process, such as the tournament manager's, or the embedded
broker's worker, which cannot reach this bus) or left with an expired lease, each played
in a thread of its own. With tasks run eagerly (``ARENA_BROKER_URL=eager``), games with an
LLM seat dispatched in this process are handed to it too (``played_by_gateway``): they wait on a
model's server for minutes.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connection

from core.models import Duel, Evaluation, Job, JobKind
from core.services.online import LOCAL_REFEREE
from duel_runner.evaluations import evaluation_play
from duel_runner.services import duel_play

logger = logging.getLogger(__name__)

#: How each kind of job with a seat is played, by its subject's id.
PLAYS: dict[str, Callable[[int], None]] = {
    JobKind.DUEL: lambda duel_id: duel_play(duel_id=duel_id),
    JobKind.EVALUATION: lambda evaluation_id: evaluation_play(evaluation_id=evaluation_id),
}

#: The subjects of each kind, as querysets.
SUBJECTS: dict[str, type[Duel] | type[Evaluation]] = {
    JobKind.DUEL: Duel,
    JobKind.EVALUATION: Evaluation,
}


def game_play(*, kind: str, subject_id: int) -> None:
    """Play a duel or an evaluation (``PLAYS``) where it can be played: here, unless it
    needs the gateway's process (``played_by_gateway``), which is then handed it (and
    also takes it up by itself, so nothing is lost if that process is not this one)."""
    if played_by_gateway(kind=kind, subject_id=subject_id):
        if LOCAL_REFEREE.submit is not None:
            LOCAL_REFEREE.submit(kind, subject_id)
        return
    PLAYS[kind](subject_id)


def played_by_gateway(*, kind: str, subject_id: int) -> bool:
    """Whether a game is played in the gateway's process rather than by the worker that
    took its task up: one with an online seat when the seat bus is in memory (no Redis
    bus; only the gateway's process holds the clients' connections), and, with tasks run
    eagerly (``ARENA_BROKER_URL=eager``, no worker), one with an LLM seat, so that the pass
    that dispatched it (the tournament manager's, an owner's entry) is not held for the
    minutes an LLM game takes, when that process is this one."""
    subject = SUBJECTS[kind].objects.filter(pk=subject_id)
    if not settings.ARENA_ONLINE_BUS_URL and subject.with_online_seat().exists():
        return True
    return (
        settings.CELERY_TASK_ALWAYS_EAGER
        and LOCAL_REFEREE.submit is not None
        and subject.with_llm_seat().exists()
    )


class OnlineDuelRunner:
    def __init__(self, *, concurrency: int, poll_seconds: float = 0.5) -> None:
        self.poll_seconds = poll_seconds
        self._pool = concurrent.futures.ThreadPoolExecutor(
            concurrency, thread_name_prefix="online-duel"
        )
        self._playing: set[tuple[str, int]] = set()
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

    def submit(self, kind: str, subject_id: int) -> bool:
        """Play the duel or evaluation in a thread of the pool, unless it is being played
        here."""
        with self._lock:
            if (kind, subject_id) in self._playing or self._stop.is_set():
                return False
            self._playing.add((kind, subject_id))
        self._pool.submit(self._play, kind, subject_id)
        return True

    def _play(self, kind: str, subject_id: int) -> None:
        try:
            PLAYS[kind](subject_id)
        except Exception:
            logger.exception("online %s %s failed to run", kind, subject_id)
        finally:
            connection.close()
            with self._lock:
                self._playing.discard((kind, subject_id))

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                close_old_connections()
                claimable = Job.objects.claimable()
                # Queued ones, and any whose referee here stopped renewing its lease.
                queued = [
                    (JobKind.DUEL, pk)
                    for pk in Duel.objects.filter(job__in=claimable)
                    .with_online_seat()
                    .order_by("pk")
                    .values_list("pk", flat=True)[:200]
                ] + [
                    (JobKind.EVALUATION, pk)
                    for pk in Evaluation.objects.filter(job__in=claimable)
                    .with_online_seat()
                    .order_by("pk")
                    .values_list("pk", flat=True)[:200]
                ]
            except Exception:
                logger.exception("could not look for queued online duels and evaluations")
                continue
            for kind, subject_id in queued:
                self.submit(kind, subject_id)
        connection.close()
