"""A worker's side of a job: claim it, keep its lease from a heartbeat thread while the
work runs, record the outcome only while it still holds the lease, or give it back."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta

from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone

from core.jobs.lifecycle import job_ended, job_fail, job_mirror, job_move, job_of
from core.jobs.policies import Outcome, policy_of
from core.models.jobs import Job, JobStatus
from core.models.submissions import resend_at_default

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


def job_wait(*, kind: str, subject_id: int) -> float | None:
    """Seconds until another worker's lease on the running job runs out; None when it is
    not running (over, or queued for whoever takes the message)."""
    job = Job.objects.of(kind, subject_id).filter(status=JobStatus.RUNNING).first()
    if job is None or job.lease_expires_at is None:
        return None
    return max(1.0, (job.lease_expires_at - timezone.now()).total_seconds() + 1)


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
        if not policy.has_times:
            job_mirror(job, status, now=now)
        job_ended(job, status)
    return True


def job_give_back(
    *, job: Job, worker: str, problem: str, retry_in: float | None = None, log: str = ""
) -> bool:
    """A job ``worker`` holds but cannot finish (it could not build an agent on its host,
    a push was refused): queued again for any worker while it has attempts left, its
    ``log`` kept; after the last, failed with the reason, which is the platform's, not the
    agents' or the upload's. ``retry_in``: the caller's task comes back after that many
    seconds itself; the watchdog sends its message again only if it did not. Returns
    whether it was queued again (False: failed, or no longer held)."""
    policy = policy_of(job)
    held = models.Q(status=JobStatus.RUNNING, lease_owner=worker)
    attempts = policy.max_attempts
    logger.warning("%s: not done (attempt %d): %s", job, job.attempts, problem)
    resend_at = resend_at_default()
    if retry_in is not None:
        resend_at += timedelta(seconds=retry_in)
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
