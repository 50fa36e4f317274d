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
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, models, transaction
from django.utils import timezone

from core import dispatch
from core.leases import Heartbeat
from core.models import Duel, Evaluation, Revision, StepStatus
from core.models.jobs import FINISHED, SUBJECT_FIELDS, Job, JobKind, JobStatus
from core.models.submissions import resend_at_default
from core.signals import job_failed

logger = logging.getLogger(__name__)

#: Jobs one watchdog step handles per pass; the rest wait for the next pass.
BATCH = 100

PLAY_DUEL = "duel_runner.tasks.play_duel"
PLAY_ONLINE_DUEL = "duel_runner.tasks.play_online_duel"
PLAY_LLM_DUEL = "duel_runner.tasks.play_llm_duel"
PLAY_EVALUATION = "duel_runner.tasks.play_evaluation"
PLAY_ONLINE_EVALUATION = "duel_runner.tasks.play_online_evaluation"
PLAY_LLM_EVALUATION = "duel_runner.tasks.play_llm_evaluation"
BUILD_REVISION = "builder.tasks.build_revision"
VALIDATE_REVISION = "duel_runner.tasks.validate_revision"
PUBLISH_REVISION = "publisher.tasks.publish_revision"


def _seat_tasks(
    model: type[Duel] | type[Evaluation], hosted: str, online: str, llm: str
) -> Callable[[Sequence[int]], dict[int, str]]:
    """The task of each duel or evaluation, by its seats: with an online agent's, where its
    seat bus is reached; with an LLM player's, on the ``online`` queue's threads (it mostly
    waits on its server); any other on ``duels``. Two queries, however many subjects."""

    def tasks(subject_ids: Sequence[int]) -> dict[int, str]:
        subjects = model.objects.filter(pk__in=subject_ids)
        with_online = set(subjects.with_online_seat().values_list("pk", flat=True))
        with_llm = set(subjects.with_llm_seat().values_list("pk", flat=True))
        return {
            pk: online if pk in with_online else llm if pk in with_llm else hosted
            for pk in subject_ids
        }

    return tasks


def _one_task(task: str) -> Callable[[Sequence[int]], dict[int, str]]:
    return lambda subject_ids: dict.fromkeys(subject_ids, task)


@dataclasses.dataclass(frozen=True)
class Policy:
    """What one kind of job is: how it runs, what it is about, how long it may take."""

    #: The subject's model, and its field that keeps a copy of the job's status.
    subject: type[models.Model]
    status_field: str
    #: The Celery task (dotted path) that runs each job of this kind, by its subject's id.
    tasks: Callable[[Sequence[int]], dict[int, str]]
    #: The task's keyword argument that takes the subject's id.
    argument: str
    #: Settings: seconds a lease lasts without a heartbeat; claims allowed.
    lease_setting: str
    attempts_setting: str
    #: In messages: what a worker does with it, whose fault a failure is not, and what an
    #: organizer can do once it failed (with advice if it happens again).
    doing: str
    whose: str
    retry: str
    advice: str = ""
    #: The subject keeps its own outcome (status, times, error), written by the worker's
    #: ``store``: a duel, an evaluation. A revision keeps only the status of each step.
    has_times: bool = True
    #: The subject's copy of a cancelled job's status.
    cancelled: str = JobStatus.CANCELLED
    #: The kind of job about the same subject that must succeed before this one is sent
    #: (a validation waits for its build): queued meanwhile without being sent (its
    #: ``resend_at`` unset), sent when that one succeeds, cancelled when it fails or is
    #: cancelled, and queued to wait again when it is queued again.
    waits_for: str | None = None

    @property
    def lease_seconds(self) -> int:
        return int(getattr(settings, self.lease_setting))

    @property
    def max_attempts(self) -> int:
        return int(getattr(settings, self.attempts_setting))

    def copy(self, status: str) -> str:
        """The subject's copy of ``status``."""
        return self.cancelled if status == JobStatus.CANCELLED else status


def _revision_step(
    step: str,
    *,
    task: str,
    attempts_setting: str,
    doing: str,
    retry: str,
    advice: str = "",
    waits_for: str | None = None,
) -> Policy:
    """A step of a revision's pipeline: the revision keeps its status (``<step>_status``)."""
    return Policy(
        subject=Revision,
        status_field=f"{step}_status",
        tasks=_one_task(task),
        argument="revision_id",
        lease_setting="ARENA_REVISION_LEASE_SECONDS",
        attempts_setting=attempts_setting,
        doing=doing,
        whose="your upload's",
        retry=retry,
        advice=advice,
        has_times=False,
        cancelled=StepStatus.NONE,
        waits_for=waits_for,
    )


POLICIES: dict[str, Policy] = {
    JobKind.BUILD: _revision_step(
        "build",
        task=BUILD_REVISION,
        attempts_setting="ARENA_REVISION_MAX_ATTEMPTS",
        doing="building this revision",
        retry="rebuild it from the admin",
        advice="If it happens again, the build may need more memory or time than a worker "
        "has (large dependencies?).",
    ),
    JobKind.VALIDATION: _revision_step(
        "validation",
        task=VALIDATE_REVISION,
        attempts_setting="ARENA_REVISION_MAX_ATTEMPTS",
        doing="validating this revision",
        retry="re-validate it from the admin",
        advice="If it happens again, your agent may use more memory or CPU than a worker "
        "can give it.",
        waits_for=JobKind.BUILD,
    ),
    JobKind.PUBLICATION: _revision_step(
        "publication",
        task=PUBLISH_REVISION,
        attempts_setting="ARENA_PUBLICATION_MAX_ATTEMPTS",
        doing="publishing this revision",
        retry="publish it again from the admin",
    ),
    JobKind.DUEL: Policy(
        subject=Duel,
        status_field="status",
        tasks=_seat_tasks(Duel, PLAY_DUEL, PLAY_ONLINE_DUEL, PLAY_LLM_DUEL),
        argument="duel_id",
        lease_setting="ARENA_DUEL_LEASE_SECONDS",
        attempts_setting="ARENA_DUEL_MAX_ATTEMPTS",
        doing="playing this duel",
        whose="the agents'",
        retry="re-run it from the admin",
    ),
    JobKind.EVALUATION: Policy(
        subject=Evaluation,
        status_field="status",
        tasks=_seat_tasks(Evaluation, PLAY_EVALUATION, PLAY_ONLINE_EVALUATION, PLAY_LLM_EVALUATION),
        argument="evaluation_id",
        lease_setting="ARENA_DUEL_LEASE_SECONDS",
        attempts_setting="ARENA_DUEL_MAX_ATTEMPTS",
        doing="playing this evaluation",
        whose="the agent's",
        retry="re-run the competition's failed evaluations from the admin",
    ),
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a worker's job ended, as ``job_record`` stores it."""

    succeeded: bool
    error: str = ""
    log: str = ""


def backoff(first: float, tries: int) -> float:
    """The wait before the next try, after ``tries`` tries: ``first``, doubled each time."""
    return first * 2**tries


def _policy(job: Job) -> Policy:
    return POLICIES[job.kind]


def _start(kind: str, subject_ids: Sequence[int]) -> None:
    """Send the tasks of the jobs of ``kind`` about these subjects to the workers once the
    current transaction commits, in the order of the subjects."""
    policy = POLICIES[kind]
    for subject_id, task in sorted(policy.tasks(subject_ids).items()):
        dispatch.start(task, **{policy.argument: subject_id})


def _mirror(job: Job, status: str, *, now: datetime, error: str | None = None) -> None:
    """Copy the job's new status to its subject, with the subject's times and error."""
    policy = _policy(job)
    fields: dict[str, object] = {policy.status_field: policy.copy(status)}
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
        _start(kind, [job.subject_id for job in jobs])
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
            _start(kind, [subject_id])
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
    _mirror(job, JobStatus.SUCCEEDED, now=now)
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


def _ended(job: Job, status: str) -> None:
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
        elif not _update(job, when, JobStatus.QUEUED, **fields):
            return False
        for waiting in _waiting_for(kind):
            free = idle(now) | models.Q(status=JobStatus.QUEUED)
            if not job_reset(kind=waiting, subject_id=subject_id, send=False, when=free):
                transaction.set_rollback(True)
                return False
        if send:
            _start(job.kind, [job.subject_id])
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
        if raced is None or not _update(raced, when, JobStatus.QUEUED, **fields):
            return None
        return raced
    _mirror(job, JobStatus.QUEUED, now=timezone.now())
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
            fields: dict[str, object] = {policy.status_field: policy.copy(JobStatus.CANCELLED)}
            if policy.has_times:
                fields.update(ended_at=now, error=why[:10_000])
            policy.subject._default_manager.filter(pk__in=subjects).update(**fields)
            for waiting in _waiting_for(kind):
                jobs_cancel(
                    jobs=Job.objects.filter(kind=waiting, **{f"{field}__in": subjects}),
                    why=f"Not started: the {JobKind(kind).label.lower()} it waits for was "
                    "cancelled.",
                )
    return cancelled


# --- a worker's side -------------------------------------------------------------------


def job_claim(*, kind: str, subject_id: int, worker: str) -> Job | None:
    """Claim the job of ``kind`` about ``subject_id`` for ``worker``: queued, or running
    under a lease that ran out (its worker died) with attempts left. Each claim counts an
    attempt. None when it is not there to be claimed (another worker has it, or it is over)."""
    job = job_of(kind=kind, subject_id=subject_id)
    if job is None:
        return None
    policy = _policy(job)
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
        if not _update(
            job, claimable & models.Q(attempts=job.attempts), JobStatus.RUNNING, **claimed
        ):
            return None
    for field, value in {"status": JobStatus.RUNNING, **claimed}.items():
        setattr(job, field, value)
    return job


def job_heartbeat(*, job: Job, worker: str) -> Heartbeat:
    """Renews ``worker``'s lease on ``job`` from a thread while the block runs. A worker
    that dies stops renewing, so its lease runs out and the watchdog takes the job over."""
    lease = _policy(job).lease_seconds
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
    policy = _policy(job)
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
            _mirror(job, status, now=now)
        _ended(job, status)
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
    policy = _policy(job)
    held = models.Q(status=JobStatus.RUNNING, lease_owner=worker)
    attempts = policy.max_attempts
    logger.warning("%s: not done (attempt %d): %s", job, job.attempts, problem)
    resend_at = resend_at_default()
    if retry_in is not None:
        resend_at += timedelta(seconds=retry_in)
    with transaction.atomic():
        if _update(
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
        _fail(
            job,
            held & models.Q(attempts__gte=attempts),
            f"Not done after {attempts} attempts, none of which a worker could finish (not "
            f"{policy.whose} fault: a problem on our side). An organizer can "
            f"{policy.retry}. The last: {problem}",
            log=log,
        )
    return False


# --- the watchdog ------------------------------------------------------------------------


def _fail(job: Job, when: models.Q, error: str, **fields: object) -> bool:
    """Fail ``job`` if its row still matches ``when``, with the jobs that wait for it;
    its kind's app is told."""
    with transaction.atomic():
        failed = _update(
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
            _ended(job, JobStatus.FAILED)
            job_failed.send(sender=Job, job=job)
    return failed


def job_requeue_expired(*, job: Job) -> bool:
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
            _start(job.kind, [job.subject_id])
    return requeued


def job_fail_exhausted(*, job: Job) -> bool:
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
    policy = _policy(job)
    now = timezone.now()
    due = models.Q(status=JobStatus.QUEUED, resend_at__lt=now, resends=job.resends)
    counted = not _kind_is_busy(job.kind)
    if counted and job.resends >= settings.ARENA_MAX_RESENDS:
        return _fail(
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
            _start(job.kind, [job.subject_id])
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
