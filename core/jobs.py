"""One lifecycle for every kind of background work (``core.models.jobs``).

A job is queued with its subject and its Celery task is started once the transaction
commits. A worker claims it with a conditional UPDATE (of several handed the same
message, one gets it), renews its lease from a heartbeat thread while it works, and
records the outcome only while it still holds the lease. A worker that cannot do it on its
host gives it back. The watchdog (``jobs_recover``) takes over the rest: a job whose
worker stopped renewing its lease is queued again, or failed after its last attempt; a
job that sat queued past its re-send time (its message lost, or no worker there) has its
message sent again, with a wait that doubles each time, and is failed with the reason
after ``ARENA_MAX_RESENDS`` re-sends made while no worker ran anything of its kind.

What differs between kinds is declared once, in ``POLICIES``: the task, the subject and
the copy of the status it keeps, the lease and the attempts. A kind's app hears of a job
that failed without its worker (``core.signals.job_failed``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from core import dispatch
from core.leases import Heartbeat
from core.models import Duel, Evaluation
from core.models.jobs import SUBJECT_FIELDS, Job, JobKind, JobStatus
from core.models.submissions import resend_at_default
from core.signals import job_failed

logger = logging.getLogger(__name__)

#: Jobs one watchdog step handles per pass; the rest wait for the next pass.
BATCH = 100

PLAY_DUEL = "duel_runner.tasks.play_duel"
PLAY_ONLINE_DUEL = "duel_runner.tasks.play_online_duel"
PLAY_LLM_DUEL = "duel_runner.tasks.play_llm_duel"
PLAY_EVALUATION = "duel_runner.tasks.play_evaluation"


def _duel_task(duel_id: int) -> str:
    """An online agent's duel where its seat bus is reached, an LLM player's on the
    ``online`` queue's threads (it mostly waits on its server), any other on ``duels``."""
    duel = Duel.objects.filter(pk=duel_id)
    if duel.with_online_seat().exists():
        return PLAY_ONLINE_DUEL
    if duel.with_llm_seat().exists():
        return PLAY_LLM_DUEL
    return PLAY_DUEL


@dataclasses.dataclass(frozen=True)
class Policy:
    """What one kind of job is: how it runs, what it is about, how long it may take."""

    #: The subject's model, and its field that keeps a copy of the job's status.
    subject: type[models.Model]
    status_field: str
    #: The Celery task (dotted path) that runs a job of this kind, given its subject's id.
    task: Callable[[int], str]
    #: The task's keyword argument that takes the subject's id.
    argument: str
    #: Settings: seconds a lease lasts without a heartbeat; claims allowed.
    lease_setting: str
    attempts_setting: str
    #: In messages: what a worker does with it, and what an organizer can do once it failed.
    doing: str
    retry: str
    #: The subject also keeps when it started and ended, and why it failed.
    has_times: bool = True

    @property
    def lease_seconds(self) -> int:
        return int(getattr(settings, self.lease_setting))

    @property
    def max_attempts(self) -> int:
        return int(getattr(settings, self.attempts_setting))


POLICIES: dict[str, Policy] = {
    JobKind.DUEL: Policy(
        subject=Duel,
        status_field="status",
        task=_duel_task,
        argument="duel_id",
        lease_setting="ARENA_DUEL_LEASE_SECONDS",
        attempts_setting="ARENA_DUEL_MAX_ATTEMPTS",
        doing="playing this duel",
        retry="re-run it from the admin",
    ),
    JobKind.EVALUATION: Policy(
        subject=Evaluation,
        status_field="status",
        task=lambda _: PLAY_EVALUATION,
        argument="evaluation_id",
        lease_setting="ARENA_DUEL_LEASE_SECONDS",
        attempts_setting="ARENA_DUEL_MAX_ATTEMPTS",
        doing="playing this evaluation",
        retry="re-run the competition's failed evaluations from the admin",
    ),
}


def _policy(job: Job) -> Policy:
    return POLICIES[job.kind]


def _start(job: Job) -> None:
    """Send the job's task to the workers once the current transaction commits."""
    policy = _policy(job)
    dispatch.start(policy.task(job.subject_id), **{policy.argument: job.subject_id})


def _mirror(job: Job, status: str, *, now: datetime, error: str | None = None) -> None:
    """Copy the job's new status to its subject, with the subject's times and error."""
    policy = _policy(job)
    fields: dict[str, object] = {policy.status_field: status}
    if policy.has_times:
        if status == JobStatus.RUNNING:
            fields.update(started_at=now, ended_at=None)
        elif status == JobStatus.QUEUED:
            fields.update(ended_at=None)
        else:
            fields.update(ended_at=now)
        if error is not None:
            fields["error"] = error[:10_000]
    policy.subject._default_manager.filter(pk=job.subject_id).update(**fields)


def _update(job: Job, when: models.Q, status: str, **fields: object) -> bool:
    """Move ``job`` to ``status`` if its row still matches ``when``, and its subject with it.
    The conditional UPDATE decides among callers racing for the same change."""
    now = timezone.now()
    if not Job.objects.filter(when, pk=job.pk).update(status=status, **fields):
        return False
    error = fields.get("error") if status in (JobStatus.FAILED, JobStatus.CANCELLED) else None
    _mirror(job, status, now=now, error=error if isinstance(error, str) else None)
    return True


# --- queueing --------------------------------------------------------------------------


def jobs_queue(kind: str, subject_ids: Iterable[int]) -> list[Job]:
    """Queue a job of ``kind`` for each subject and start its task after the commit."""
    field = f"{SUBJECT_FIELDS[JobKind(kind)]}_id"
    jobs = Job.objects.bulk_create(
        Job(kind=kind, **{field: subject_id}) for subject_id in subject_ids
    )
    for job in sorted(jobs, key=lambda job: job.subject_id):
        _start(job)
    return jobs


def job_of(kind: str, subject_id: int) -> Job | None:
    return Job.objects.of(kind, subject_id).first()


def job_retry(job: Job) -> bool:
    """Queue again a job that failed or was cancelled (an organizer's retry), with its
    attempts and re-sends counted afresh, and start it. Of two organizers clicking at once,
    one acts: returns whether this call did."""
    with transaction.atomic():
        retried = _update(
            job,
            models.Q(status__in=[JobStatus.FAILED, JobStatus.CANCELLED]),
            JobStatus.QUEUED,
            attempts=0,
            resends=0,
            resend_at=resend_at_default(),
            lease_owner="",
            lease_expires_at=None,
            started_at=None,
            ended_at=None,
            error="",
        )
        if retried:
            _start(job)
    return retried


def jobs_cancel(jobs: models.QuerySet[Job], *, why: str, running: bool = False) -> int:
    """Cancel the queued jobs of ``jobs`` (and the running ones with ``running``): a worker
    that takes up the message finds nothing to claim, and one playing it can no longer
    record it, since it no longer holds it. Returns how many."""
    statuses = [JobStatus.QUEUED, *([JobStatus.RUNNING] if running else [])]
    now = timezone.now()
    with transaction.atomic():
        chosen = list(
            jobs.select_for_update().filter(status__in=statuses).values_list("pk", "kind")
        )
        cancelled = Job.objects.filter(pk__in=[pk for pk, _ in chosen]).update(
            status=JobStatus.CANCELLED,
            ended_at=now,
            lease_owner="",
            lease_expires_at=None,
            resend_at=None,
            error=why[:10_000],
        )
        for kind in {kind for _, kind in chosen}:
            policy = POLICIES[kind]
            subjects = Job.objects.filter(pk__in=[pk for pk, of in chosen if of == kind]).values(
                f"{SUBJECT_FIELDS[JobKind(kind)]}_id"
            )
            fields: dict[str, object] = {policy.status_field: JobStatus.CANCELLED}
            if policy.has_times:
                fields.update(ended_at=now, error=why[:10_000])
            policy.subject._default_manager.filter(pk__in=subjects).update(**fields)
    return cancelled


# --- a worker's side -------------------------------------------------------------------


def job_claim(kind: str, subject_id: int, *, worker: str) -> Job | None:
    """Claim the job of ``kind`` about ``subject_id`` for ``worker``: queued, or running
    under a lease that ran out (its worker died) with attempts left. Each claim counts an
    attempt. None when it is not there to be claimed (another worker has it, or it is over)."""
    job = job_of(kind, subject_id)
    if job is None:
        return None
    policy = _policy(job)
    now = timezone.now()
    claimable = models.Q(status=JobStatus.QUEUED) | models.Q(
        status=JobStatus.RUNNING, lease_expires_at__lt=now, attempts__lt=policy.max_attempts
    )
    with transaction.atomic():
        if not _update(
            job,
            claimable,
            JobStatus.RUNNING,
            lease_owner=worker,
            lease_expires_at=now + timedelta(seconds=policy.lease_seconds),
            attempts=F("attempts") + 1,
            started_at=now,
            ended_at=None,
            resend_at=None,
        ):
            return None
    job.refresh_from_db()
    return job


def job_heartbeat(job: Job, *, worker: str) -> Heartbeat:
    """Renews ``worker``'s lease on ``job`` from a thread while the block runs. A worker
    that dies stops renewing, so its lease runs out and the watchdog takes the job over."""
    lease = _policy(job).lease_seconds
    held = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, lease_owner=worker)

    def renew() -> None:
        held.update(lease_expires_at=timezone.now() + timedelta(seconds=lease))

    return Heartbeat(renew, interval=lease / 3)


def job_wait(kind: str, subject_id: int) -> float | None:
    """Seconds until another worker's lease on the running job runs out; None when it is
    not running (over, or queued for whoever takes the message)."""
    job = Job.objects.of(kind, subject_id).filter(status=JobStatus.RUNNING).first()
    if job is None or job.lease_expires_at is None:
        return None
    return max(1.0, (job.lease_expires_at - timezone.now()).total_seconds() + 1)


def job_record(job: Job, *, worker: str, store: Callable[[], object]) -> bool:
    """Record what ``worker`` did, if it still holds ``job``: ``store`` writes the
    subject's outcome (its copy of the status and its error included) and the job ends
    with them, in one transaction that keeps the job's row locked, so its lease cannot
    be taken over meanwhile. A worker that lost the job records nothing: returns False."""
    policy = _policy(job)
    with transaction.atomic():
        held = Job.objects.select_for_update().filter(
            pk=job.pk, status=JobStatus.RUNNING, lease_owner=worker
        )
        if not held.exists():
            return False
        store()
        status, error = (
            policy.subject._default_manager.filter(pk=job.subject_id)
            .values_list(policy.status_field, "error")
            .get()
        )
        held.update(
            status=status,
            lease_owner="",
            lease_expires_at=None,
            ended_at=timezone.now(),
            error=error,
        )
    return True


def job_give_back(job: Job, *, worker: str, problem: str) -> bool:
    """A job ``worker`` holds but cannot do on its host (it could not build an agent
    there): queued again for any worker while it has attempts left; after the last,
    failed with the reason, which is the platform's, never the agents'. Returns whether
    it was queued again (False: failed, or the worker no longer held it)."""
    policy = _policy(job)
    held = models.Q(status=JobStatus.RUNNING, lease_owner=worker)
    attempts = policy.max_attempts
    logger.warning("%s: not done on this host (attempt %d): %s", job, job.attempts, problem)
    with transaction.atomic():
        if _update(
            job,
            held & models.Q(attempts__lt=attempts),
            JobStatus.QUEUED,
            lease_owner="",
            lease_expires_at=None,
            resend_at=resend_at_default(),
            error=f"Attempt {job.attempts} could not start: {problem}"[:10_000],
        ):
            return True
        _fail(
            job,
            held & models.Q(attempts__gte=attempts),
            f"Not done: the workers could not prepare it on their machines ({attempts} "
            f"attempts; not the agents' fault: a problem on our side). An organizer can "
            f"{policy.retry}. The last: {problem}",
        )
    return False


# --- the watchdog ------------------------------------------------------------------------


def _fail(job: Job, when: models.Q, error: str) -> bool:
    """Fail ``job`` if its row still matches ``when``; its kind's app is told."""
    failed = _update(
        job,
        when,
        JobStatus.FAILED,
        lease_owner="",
        lease_expires_at=None,
        resend_at=None,
        ended_at=timezone.now(),
        error=error[:10_000],
    )
    if failed:
        job.refresh_from_db()
        job_failed.send(sender=Job, job=job)
    return failed


def job_requeue_expired(job: Job) -> bool:
    """Queue again a job whose worker stopped renewing its lease, with attempts left, and
    start it. The worker that lost the lease can no longer record its outcome."""
    with transaction.atomic():
        requeued = _update(
            job,
            models.Q(
                status=JobStatus.RUNNING,
                lease_expires_at__lt=timezone.now(),
                attempts__lt=_policy(job).max_attempts,
            ),
            JobStatus.QUEUED,
            lease_owner="",
            lease_expires_at=None,
            resend_at=resend_at_default(),
        )
        if requeued:
            _start(job)
    return requeued


def job_fail_exhausted(job: Job) -> bool:
    """Fail a job whose worker lost the lease on its last allowed attempt, saying so."""
    policy = _policy(job)
    attempts = policy.max_attempts
    return _fail(
        job,
        models.Q(
            status=JobStatus.RUNNING,
            lease_expires_at__lt=timezone.now(),
            attempts__gte=attempts,
        ),
        f"Not finished: the worker {policy.doing} stopped answering (it was killed or lost "
        f"contact with the platform) on each of {attempts} attempts. This is a problem on "
        f"our side: check the workers, then {policy.retry}.",
    )


def _kind_is_busy(kind: str) -> bool:
    """Whether a worker is running a job of ``kind``: a queued one may just be waiting its
    turn behind the others, so its re-sends do not count towards failing it."""
    return Job.objects.filter(kind=kind, status=JobStatus.RUNNING).exists()


def job_resend(job: Job) -> bool:
    """Send again the message of a job queued past its re-send time; the next waits twice
    as long. A re-send made while no worker runs anything of its kind counts: after
    ``ARENA_MAX_RESENDS`` of them the job fails with the reason. Returns whether this
    call did either. A message sent twice does no harm: only one worker claims the job."""
    now = timezone.now()
    due = models.Q(status=JobStatus.QUEUED, resend_at__lt=now, resends=job.resends)
    counted = not _kind_is_busy(job.kind)
    if counted and job.resends >= settings.ARENA_MAX_RESENDS:
        return _fail(
            job,
            due,
            f"No worker took it up: it was sent to the workers {job.resends + 1} times and "
            f"stayed queued while none was busy. The platform's workers may be down; this "
            f"is not a problem with the agents. An organizer can {_policy(job).retry} once "
            f"they are back.",
        )
    resends = job.resends + counted
    wait = timedelta(seconds=settings.ARENA_RESEND_AFTER_SECONDS * 2**resends)
    with transaction.atomic():
        resent = bool(
            Job.objects.filter(due, pk=job.pk).update(resends=resends, resend_at=now + wait)
        )
        if resent:
            _start(job)
    return resent


def jobs_recover(now: datetime | None = None) -> bool:
    """The watchdog's pass over every kind: jobs whose lease ran out queued again or
    failed, queued ones past their re-send time sent again or failed. Returns whether it
    did any of it. Each change is a conditional UPDATE, so several watchdogs can run."""
    now = now or timezone.now()
    did_work = False
    kinds = list(POLICIES)
    for job in (
        Job.objects.filter(kind__in=kinds).lease_expired(now).order_by("lease_expires_at")[:BATCH]
    ):
        if job_requeue_expired(job):
            logger.info("%s queued again: its worker's lease expired", job)
            did_work = True
        elif job_fail_exhausted(job):
            logger.warning("%s failed: every attempt lost its lease", job)
            did_work = True
    for job in Job.objects.filter(kind__in=kinds).resend_due(now).order_by("resend_at")[:BATCH]:
        if job_resend(job):
            job.refresh_from_db()
            if job.status == JobStatus.FAILED:
                logger.warning("%s failed: no worker took it up", job)
            else:
                logger.info("%s sent to the workers again", job)
            did_work = True
    return did_work
