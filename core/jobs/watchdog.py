"""The watchdog: jobs whose worker stopped renewing its lease are queued again or failed;
jobs queued past their re-send time are sent again, or failed after the last re-send."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, models, transaction
from django.utils import timezone

from core.jobs.lifecycle import job_fail, job_move, tasks_start
from core.jobs.policies import POLICIES, backoff, policy_of
from core.models.jobs import Job, JobStatus
from core.models.submissions import resend_at_default

logger = logging.getLogger(__name__)


#: Jobs one watchdog step handles per pass; the rest wait for the next pass.
BATCH = 100

# --- the watchdog ------------------------------------------------------------------------


def job_requeue_expired(*, job: Job) -> bool:
    """Queue again a job whose worker stopped renewing its lease, with attempts left, and
    start it. The worker that lost the lease can no longer record its outcome."""
    with transaction.atomic():
        requeued = job_move(
            job,
            models.Q(
                status=JobStatus.RUNNING,
                lease_expires_at__lt=timezone.now(),
                attempts__lt=policy_of(job).max_attempts,
            ),
            JobStatus.QUEUED,
            lease_owner="",
            lease_expires_at=None,
            resend_at=resend_at_default(),
        )
        if requeued:
            tasks_start(job.kind, [job.subject_id])
    return requeued


def job_fail_exhausted(*, job: Job) -> bool:
    """Fail a job whose worker lost the lease on its last allowed attempt, saying so."""
    policy = policy_of(job)
    attempts = policy.max_attempts
    return job_fail(
        job,
        models.Q(
            status=JobStatus.RUNNING,
            lease_expires_at__lt=timezone.now(),
            attempts__gte=attempts,
        ),
        f"Not finished: the worker {policy.doing} stopped {attempts} times before it "
        f"finished (it was killed or lost contact with the platform). This is a problem on "
        f"our side, not {policy.whose} fault: an organizer can {policy.retry}. "
        f"{policy.advice}".strip(),
    )


def _kind_is_busy(kind: str) -> bool:
    """Whether a worker is running a job of ``kind``: a queued one may just be waiting its
    turn behind the others, so its re-sends do not count towards failing it."""
    return Job.objects.filter(kind=kind, status=JobStatus.RUNNING).exists()


def job_resend(*, job: Job) -> bool:
    """Send again the message of a job queued past its re-send time; the next waits twice
    as long. A re-send made while no worker runs anything of its kind counts: after
    ``ARENA_MAX_RESENDS`` of them the job fails with the reason. Returns whether this
    call did either. A message sent twice does no harm: only one worker claims the job."""
    policy = policy_of(job)
    now = timezone.now()
    due = models.Q(status=JobStatus.QUEUED, resend_at__lt=now, resends=job.resends)
    counted = not _kind_is_busy(job.kind)
    if counted and job.resends >= settings.ARENA_MAX_RESENDS:
        return job_fail(
            job,
            due,
            f"No worker took up {policy.doing}: it was sent to the workers {job.resends + 1} "
            f"times and stayed queued while none was busy. The platform's workers may be "
            f"down; this is not {policy.whose} fault. An organizer can {policy.retry} once "
            f"they are back.",
        )
    resends = job.resends + counted
    wait = timedelta(seconds=backoff(settings.ARENA_RESEND_AFTER_SECONDS, resends))
    with transaction.atomic():
        resent = bool(
            Job.objects.filter(due, pk=job.pk).update(resends=resends, resend_at=now + wait)
        )
        if resent:
            tasks_start(job.kind, [job.subject_id])
    return resent


def _recover(job: Job) -> str:
    """The watchdog's work on one job: what it did ('' for nothing)."""
    if job.status == JobStatus.RUNNING:
        if job_requeue_expired(job=job):
            return "queued again: its worker's lease expired"
        if job_fail_exhausted(job=job):
            return "failed: every attempt lost its lease"
        return ""
    if not job_resend(job=job):
        return ""
    job.refresh_from_db()
    return "failed: no worker took it up" if job.status == JobStatus.FAILED else "sent again"


def jobs_recover(now: datetime | None = None) -> bool:
    """The watchdog's pass over every kind: jobs whose lease ran out queued again or
    failed, queued ones past their re-send time sent again or failed. Returns whether it
    did any of it. Each change is a conditional UPDATE, so several watchdogs can run; a
    job it cannot handle (a bug) is logged and left for the next pass, the others done."""
    now = now or timezone.now()
    jobs = Job.objects.filter(kind__in=list(POLICIES))
    due = [
        *jobs.lease_expired(now).order_by("lease_expires_at")[:BATCH],
        *jobs.resend_due(now).order_by("resend_at")[:BATCH],
    ]
    did_work = False
    for job in due:
        try:
            done = _recover(job)
        except DatabaseError:
            raise
        except Exception:
            logger.exception("%s: the watchdog could not handle it", job)
            continue
        if done:
            log = logger.warning if done.startswith("failed") else logger.info
            log("%s %s", job, done)
            did_work = True
    return did_work
