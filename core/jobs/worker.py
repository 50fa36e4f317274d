"""A worker's side of a job, written once (``job_run``): claim it, keep its lease from a
heartbeat thread while the work runs, hold this host's builds of the agents it starts,
record the outcome only while it still holds the lease, give it back when this worker
cannot do it, and fail it with the cause when the work raised. Each kind of job supplies
only its work: a function of the claimed job that returns how to store its outcome.

"Try again later" is the job's own: a job given back or put off is queued with a re-send
time, and the watchdog (``core.jobs.watchdog``) sends it again then. A worker handed a
job that another one holds does nothing: the holder records it, or its lease runs out
and the watchdog queues it again."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone

from core.errors import ArenaError
from core.jobs.lifecycle import job_ended, job_fail, job_mirror, job_move, job_of
from core.jobs.local_builds import revisions_built_here
from core.jobs.policies import Outcome, policy_of
from core.models import Revision
from core.models.jobs import Job, JobStatus

logger = logging.getLogger(__name__)

#: A job given back (this host could not make an agent's build, or cannot confine its
#: agents) is sent to the workers again after this, for any worker of any host.
GIVE_BACK_SECONDS = 10.0


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


# --- a worker's side -------------------------------------------------------------------


def job_claim(*, kind: str, subject_id: int, worker: str) -> Job | None:
    """Claim the job of ``kind`` about ``subject_id`` for ``worker``: queued, or running
    under a lease that ran out (its worker died) with attempts left. Each claim counts an
    attempt. None when it is not there to be claimed (another worker has it, or it is over)."""
    job = job_of(kind=kind, subject_id=subject_id)
    if job is None:
        return None
    policy = policy_of(job)
    now = timezone.now()
    # A queued job whose message was never sent waits for another job (a validation
    # for its build): a stray message does not start it.
    claimable = models.Q(status=JobStatus.QUEUED, resend_at__isnull=False) | models.Q(
        status=JobStatus.RUNNING, lease_expires_at__lt=now, attempts__lt=policy.max_attempts
    )
    claimed: dict[str, object] = {
        "lease_owner": worker,
        "lease_expires_at": now + timedelta(seconds=policy.lease_seconds),
        "attempts": job.attempts + 1,
        "started_at": now,
        "ended_at": None,
        # A worker took its message: the re-sends of the next one are counted afresh.
        "resends": 0,
        "resend_at": None,
    }
    with transaction.atomic():
        # The attempts read above, in the condition: what is written is exactly one more.
        if not job_move(
            job, claimable & models.Q(attempts=job.attempts), JobStatus.RUNNING, **claimed
        ):
            return None
    for field, value in {"status": JobStatus.RUNNING, **claimed}.items():
        setattr(job, field, value)
    return job


def job_heartbeat(*, job: Job, worker: str) -> Heartbeat:
    """Renews ``worker``'s lease on ``job`` from a thread while the block runs. A worker
    that dies stops renewing, so its lease runs out and the watchdog takes the job over."""
    lease = policy_of(job).lease_seconds
    held = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, lease_owner=worker)

    def renew() -> None:
        held.update(lease_expires_at=timezone.now() + timedelta(seconds=lease))

    return Heartbeat(renew, interval=lease / 3)


def job_record(*, job: Job, worker: str, store: Callable[[], Outcome]) -> bool:
    """Record what ``worker`` did, if it still holds ``job``: ``store`` writes the
    subject's outcome (a duel's result, a revision's image) and says how the job ended,
    and the job ends so, in one transaction that keeps the job's row locked, so its lease
    cannot be taken over meanwhile. A worker that lost the job records nothing: returns
    False."""
    policy = policy_of(job)
    with transaction.atomic():
        held = Job.objects.select_for_update().filter(
            pk=job.pk, status=JobStatus.RUNNING, lease_owner=worker
        )
        if not held.exists():
            return False
        outcome = store()
        status = JobStatus.SUCCEEDED if outcome.succeeded else JobStatus.FAILED
        now = timezone.now()
        held.update(
            status=status,
            lease_owner="",
            lease_expires_at=None,
            ended_at=now,
            error=outcome.error[:10_000],
            log=outcome.log,
        )
        if not policy.stores_status:
            job_mirror(job, status)
        job_ended(job, status)
    return True


def job_give_back(
    *, job: Job, worker: str, problem: str, retry_in: float = GIVE_BACK_SECONDS, log: str = ""
) -> bool:
    """A job ``worker`` holds but cannot finish (it could not build an agent on its host,
    a push was refused): queued again for any worker while it has attempts left, its
    ``log`` kept; after the last, failed with the reason, which is the platform's, not the
    agents' or the upload's. The watchdog sends it again after ``retry_in`` seconds.
    Returns whether it was queued again (False: failed, or no longer held)."""
    policy = policy_of(job)
    held = models.Q(status=JobStatus.RUNNING, lease_owner=worker)
    attempts = policy.max_attempts
    logger.warning("%s: not done (attempt %d): %s", job, job.attempts, problem)
    resend_at = timezone.now() + timedelta(seconds=retry_in)
    with transaction.atomic():
        if job_move(
            job,
            held & models.Q(attempts__lt=attempts),
            JobStatus.QUEUED,
            lease_owner="",
            lease_expires_at=None,
            resend_at=resend_at,
            error=f"Attempt {job.attempts} of {attempts} did not finish (trying again "
            f"later): {problem}"[:10_000],
            log=log,
        ):
            return True
        job_fail(
            job,
            held & models.Q(attempts__gte=attempts),
            f"Not done after {attempts} attempts, none of which a worker could finish (not "
            f"{policy.whose} fault: a problem on our side). An organizer can "
            f"{policy.retry}. The last: {problem}",
            log=log,
        )
    return False


# --- running a job -----------------------------------------------------------------------


class GiveBack(ArenaError):
    """Raised by a job's work when this worker cannot do it (an agent's build it could not
    make on its host, agents it cannot confine, a push the remote refused): the job is
    given back (``job_give_back``), to be tried again after ``retry_in`` seconds by any
    worker while it has attempts left, with ``log`` kept. Never the upload's or the
    agents' fault."""

    def __init__(self, message: str, *, retry_in: float = GIVE_BACK_SECONDS, log: str = "") -> None:
        super().__init__(message)
        self.retry_in = retry_in
        self.log = log


@dataclasses.dataclass(frozen=True)
class Done:
    """What a job's work did, for ``job_run`` to record: ``store`` writes the subject's
    outcome in the transaction that ends the job and says how it ended; ``then`` runs
    once it was recorded (not when this worker had lost the job)."""

    store: Callable[[], Outcome]
    then: Callable[[], object] | None = None


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A job this worker claimed, handed to its kind's work."""

    job: Job
    worker: str
    _held: contextlib.ExitStack

    def hold_builds(self, revisions: Sequence[Revision], *, what: str) -> None:
        """Hold this host's builds of the hosted ones among ``revisions`` until the work
        ends: made here first where missing (``core.jobs.local_builds``), off every
        player's clock. One this host cannot make gives the job back (``GiveBack``)."""
        try:
            built = self._held.enter_context(revisions_built_here(revisions))
        except ArenaError as error:
            raise GiveBack(error.message) from error
        for build in built:
            logger.info(
                "%s: built %s on this host in %.1f s, before play (%s)",
                what,
                build.revision,
                build.seconds,
                build.revision.image or build.revision.build_dir,
            )


def job_run(*, kind: str, subject_id: int, work: Callable[[Claimed], Done | None]) -> bool:
    """Run the job of ``kind`` about ``subject_id`` on this worker: claim it, then run
    ``work`` under a renewed lease and record what it returns. ``work`` returns None when
    it ended the job itself (a publication cancelled because its revision changed).

    - Not claimed (another worker holds it, or it is over): nothing is done.
    - ``work`` raises ``GiveBack``: the job is given back (``job_give_back``).
    - ``work`` raises anything else (a bug, a full disk, the task's time limit): the job
      fails with the cause, as the watchdog would fail it, and the error is raised again.

    Returns whether this worker recorded the job's outcome.
    """
    worker = worker_name()
    job = job_claim(kind=kind, subject_id=subject_id, worker=worker)
    if job is None:
        return False
    try:
        with job_heartbeat(job=job, worker=worker), contextlib.ExitStack() as held:
            done = work(Claimed(job=job, worker=worker, _held=held))
    except GiveBack as error:
        job_give_back(
            job=job, worker=worker, problem=error.message, retry_in=error.retry_in, log=error.log
        )
        return False
    except Exception as error:
        policy = policy_of(job)
        job_fail(
            job,
            models.Q(status=JobStatus.RUNNING, lease_owner=worker),
            f"Failed unexpectedly while {policy.doing} ({type(error).__name__}: {error}). "
            f"This is a problem on our side, not {policy.whose} fault: an organizer can "
            f"{policy.retry}.",
        )
        raise
    if done is None:
        return False
    recorded = job_record(job=job, worker=worker, store=done.store)
    if recorded and done.then is not None:
        done.then()
    return recorded


def job_defer(*, kind: str, subject_id: int, seconds: float = GIVE_BACK_SECONDS) -> bool:
    """Put off a queued job that a worker took up but cannot start yet (an online agent's
    evaluation while it plays a duel: a seat plays one game at a time): the watchdog sends
    it again after ``seconds``. A worker answered, so its re-sends count afresh. Returns
    whether it was still queued."""
    return bool(
        Job.objects.of(kind, subject_id)
        .filter(status=JobStatus.QUEUED, resend_at__isnull=False)
        .update(resends=0, resend_at=timezone.now() + timedelta(seconds=seconds))
    )
