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
that failed without its worker (``core.jobs.signals.job_failed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from core.jobs import dispatch
from core.jobs.policies import POLICIES, policy_of
from core.jobs.signals import job_failed
from core.models.jobs import FINISHED, SUBJECT_FIELDS, Job, JobKind, JobStatus
from core.models.submissions import resend_at_default


def tasks_start(kind: str, subject_ids: Sequence[int]) -> None:
    """Send the tasks of the jobs of ``kind`` about these subjects to the workers once the
    current transaction commits, in the order of the subjects."""
    policy = POLICIES[kind]
    queues = policy.queues(subject_ids) if policy.queues else {}
    for subject_id in sorted(subject_ids):
        dispatch.start(policy.task, queue=queues.get(subject_id), **{policy.argument: subject_id})


def job_mirror(job: Job, status: str) -> None:
    """Copy the job's new status to its subject. Its times and error stay the job's,
    which the subject's readers take from there (``Duel.played``, ``Duel.reported_error``)."""
    policy = policy_of(job)
    policy.subject._default_manager.filter(pk=job.subject_id).update(
        **{policy.status_field: policy.copy(status)}
    )


def job_move(job: Job, when: models.Q, status: str, **fields: object) -> bool:
    """Move ``job`` to ``status`` if its row still matches ``when``, and its subject with it.
    The conditional UPDATE decides among callers racing for the same change."""
    if not Job.objects.filter(when, pk=job.pk).update(status=status, **fields):
        return False
    job_mirror(job, status)
    return True


# --- queueing --------------------------------------------------------------------------


def jobs_queue(*, kind: str, subject_ids: Iterable[int], send: bool = True) -> list[Job]:
    """Queue a job of ``kind`` for each subject and start its task after the commit; or,
    without ``send``, leave it queued until ``job_send`` (a validation waits for its
    build), which nothing re-sends meanwhile."""
    field = f"{SUBJECT_FIELDS[JobKind(kind)]}_id"
    jobs = Job.objects.bulk_create(
        Job(kind=kind, resend_at=resend_at_default() if send else None, **{field: subject_id})
        for subject_id in subject_ids
    )
    if send:
        tasks_start(kind, [job.subject_id for job in jobs])
    return jobs


def job_send(*, kind: str, subject_id: int) -> bool:
    """Start a job queued to wait for another (``Policy.waits_for``): a validation once
    its build succeeded. Returns whether it was waiting."""
    with transaction.atomic():
        sent = bool(
            Job.objects.of(kind, subject_id)
            .filter(status=JobStatus.QUEUED, resend_at__isnull=True)
            .update(resend_at=resend_at_default())
        )
        if sent:
            tasks_start(kind, [subject_id])
    return sent


def job_done(*, kind: str, subject_id: int, log: str) -> Job:
    """A job with nothing to do, recorded as done at once with ``log`` saying why (an
    online agent's build: nothing was uploaded)."""
    now = timezone.now()
    job = Job.objects.create(
        kind=kind,
        status=JobStatus.SUCCEEDED,
        resend_at=None,
        started_at=now,
        ended_at=now,
        log=log,
        **{f"{SUBJECT_FIELDS[JobKind(kind)]}_id": subject_id},
    )
    job_mirror(job, JobStatus.SUCCEEDED)
    return job


def idle(now: datetime | None = None) -> models.Q:
    """Jobs no worker has to do or holds: over, or running under a lease that ran out
    (its worker died)."""
    return models.Q(status__in=FINISHED) | models.Q(
        status=JobStatus.RUNNING, lease_expires_at__lt=now or timezone.now()
    )


def _waiting_for(kind: str) -> list[str]:
    """The kinds of job that wait for one of ``kind`` (a build's validation)."""
    return [other for other, policy in POLICIES.items() if policy.waits_for == kind]


def _ready(kind: str) -> models.Q:
    """Jobs of ``kind`` whose subject's job that they wait for (if any) succeeded."""
    waits_for = POLICIES[kind].waits_for
    if waits_for is None:
        return models.Q()
    field = f"{SUBJECT_FIELDS[JobKind(kind)]}_id"
    done = Job.objects.filter(
        kind=waits_for, status=JobStatus.SUCCEEDED, **{field: models.OuterRef(field)}
    )
    return models.Q(models.Exists(done))


def job_ended(job: Job, status: str) -> None:
    """What ``job`` ending so does to the jobs that wait for it: sent once it succeeded,
    cancelled when it failed or was cancelled."""
    for kind in _waiting_for(job.kind):
        if status == JobStatus.SUCCEEDED:
            job_send(kind=kind, subject_id=job.subject_id)
        else:
            jobs_cancel(
                jobs=Job.objects.of(kind, job.subject_id),
                why=f"Not started: the {job.get_kind_display().lower()} it waits for did not "
                "succeed.",
            )


def job_reset(
    *, kind: str, subject_id: int, send: bool = True, when: models.Q | None = None
) -> bool:
    """Queue the job of ``kind`` about the subject afresh (made if it has none): its
    attempts, re-sends, times, error and log cleared; started now, or with ``send=False``
    left waiting for ``job_send``. Only if the job matches ``when`` (default: whatever
    its state); one that waits for another is started only once that one succeeded. The
    jobs that wait for it wait again, unless a live worker holds one (then nothing is
    done). Of two organizers clicking at once, one acts. Returns whether this call did."""
    now = timezone.now()
    fields: dict[str, object] = {
        "attempts": 0,
        "resends": 0,
        "resend_at": resend_at_default() if send else None,
        "lease_owner": "",
        "lease_expires_at": None,
        "started_at": None,
        "ended_at": None,
        "error": "",
        "log": "",
    }
    ready = _ready(kind) if send else models.Q()
    when = (when or models.Q()) & ready
    with transaction.atomic():
        job = job_of(kind=kind, subject_id=subject_id)
        if job is None:
            job = _created(kind, subject_id, ready=ready, when=when, fields=fields)
            if job is None:
                return False
        elif not job_move(job, when, JobStatus.QUEUED, **fields):
            return False
        for waiting in _waiting_for(kind):
            free = idle(now) | models.Q(status=JobStatus.QUEUED)
            if not job_reset(kind=waiting, subject_id=subject_id, send=False, when=free):
                transaction.set_rollback(True)
                return False
        if send:
            tasks_start(job.kind, [job.subject_id])
    return True


def _created(
    kind: str, subject_id: int, *, ready: models.Q, when: models.Q, fields: dict[str, object]
) -> Job | None:
    """A new queued job, for ``job_reset`` of a subject that has none, if it is ``ready``
    (what it waits for succeeded); if another caller made it meanwhile, that one, queued
    afresh if it matches ``when``. None when neither."""
    subject = {f"{SUBJECT_FIELDS[JobKind(kind)]}_id": subject_id}
    try:
        with transaction.atomic():
            job = Job.objects.create(kind=kind, **subject, **fields)
            if not Job.objects.filter(ready, pk=job.pk).exists():
                raise _NotReady
    except _NotReady:
        return None
    except IntegrityError:
        raced = job_of(kind=kind, subject_id=subject_id)
        if raced is None or not job_move(raced, when, JobStatus.QUEUED, **fields):
            return None
        return raced
    job_mirror(job, JobStatus.QUEUED)
    return job


class _NotReady(Exception):
    """A new job does not match what its caller asked for: made, then rolled back."""


def job_of(*, kind: str, subject_id: int) -> Job | None:
    return Job.objects.of(kind, subject_id).first()


def job_retry(*, job: Job) -> bool:
    """Queue again a job that failed or was cancelled (an organizer's retry), with its
    attempts and re-sends counted afresh, and start it (one that waits for another only
    once that one succeeded; those that wait for it wait again). Of two organizers
    clicking at once, one acts: returns whether this call did."""
    return job_reset(
        kind=job.kind,
        subject_id=job.subject_id,
        when=models.Q(status__in=[JobStatus.FAILED, JobStatus.CANCELLED]),
    )


def jobs_cancel(*, jobs: models.QuerySet[Job], why: str, running: bool = False) -> int:
    """Cancel the queued jobs of ``jobs`` (and the running ones with ``running``), and the
    jobs that wait for them: a worker that takes up the message finds nothing to claim,
    and one playing it can no longer record it, since it no longer holds it. Returns how
    many of ``jobs``."""
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
            field = f"{SUBJECT_FIELDS[JobKind(kind)]}_id"
            subjects = list(
                Job.objects.filter(pk__in=[pk for pk, of in chosen if of == kind]).values_list(
                    field, flat=True
                )
            )
            policy.subject._default_manager.filter(pk__in=subjects).update(
                **{policy.status_field: policy.copy(JobStatus.CANCELLED)}
            )
            for waiting in _waiting_for(kind):
                jobs_cancel(
                    jobs=Job.objects.filter(kind=waiting, **{f"{field}__in": subjects}),
                    why=f"Not started: the {JobKind(kind).label.lower()} it waits for was "
                    "cancelled.",
                )
    return cancelled


def job_fail(job: Job, when: models.Q, error: str, **fields: object) -> bool:
    """Fail ``job`` if its row still matches ``when``, with the jobs that wait for it;
    its kind's app is told."""
    with transaction.atomic():
        failed = job_move(
            job,
            when,
            JobStatus.FAILED,
            lease_owner="",
            lease_expires_at=None,
            resend_at=None,
            ended_at=timezone.now(),
            error=error[:10_000],
            **fields,
        )
        if failed:
            job.refresh_from_db()
            job_ended(job, JobStatus.FAILED)
            job_failed.send(sender=Job, job=job)
    return failed
