"""One lifecycle for every kind of job (``core.jobs``), each test run over the five kinds:
a build, a validation and a publication of a revision, a duel and an evaluation.

A worker claims a job with a lease it renews; one that dies stops renewing, and the
watchdog (``jobs_recover``) queues the job again, or fails it after its last attempt; a
worker that lost its lease records nothing; a queued job whose message was lost is sent
again, waiting twice as long each time, and failed after the last re-send made while no
worker ran its kind. The subject keeps a copy of the job's status. ``sent`` records the
tasks that would have been started.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from core.jobs.lifecycle import job_of, job_reset, job_retry, jobs_cancel
from core.jobs.policies import POLICIES, Outcome
from core.jobs.signals import job_failed
from core.jobs.watchdog import jobs_recover
from core.jobs.worker import (
    Claimed,
    Done,
    GiveBack,
    job_claim,
    job_give_back,
    job_heartbeat,
    job_record,
    job_run,
)
from core.models import Duel, Evaluation, Job, JobKind, JobStatus, Revision, StepStatus
from core.services.revisions import revision_rebuild, revision_revalidate
from tests.factories import DuelFactory, EvaluationFactory, RevisionFactory
from tests.support.concurrency import twice_at_once

pytestmark = pytest.mark.django_db(transaction=True)

KINDS = list(JobKind)
TASKS = {
    JobKind.BUILD: "builder.tasks.build_revision",
    JobKind.VALIDATION: "duel_runner.tasks.validate_revision",
    JobKind.PUBLICATION: "publisher.tasks.publish_revision",
    JobKind.DUEL: "duel_runner.tasks.play_duel",
    JobKind.EVALUATION: "duel_runner.tasks.play_evaluation",
}
#: How each kind's subject is made with its job queued, as the services make it.
QUEUED: dict[str, Callable[[], object]] = {
    JobKind.BUILD: lambda: RevisionFactory(),
    JobKind.VALIDATION: lambda: RevisionFactory(build_status=StepStatus.SUCCEEDED),
    JobKind.PUBLICATION: lambda: RevisionFactory(
        validated=True, publication_status=StepStatus.QUEUED
    ),
    JobKind.DUEL: lambda: DuelFactory(status=JobStatus.QUEUED),
    JobKind.EVALUATION: lambda: EvaluationFactory(),
}


def ago(seconds: float) -> object:
    return timezone.now() - timedelta(seconds=seconds)


def queued(kind: str) -> Job:
    subject = QUEUED[kind]()
    job = job_of(kind=kind, subject_id=subject.pk)  # type: ignore[attr-defined]
    assert job is not None and job.status == JobStatus.QUEUED
    return job


def held(kind: str, *, attempts: int = 1, expired: bool = True) -> Job:
    """A job of ``kind`` a worker (dead, with ``expired``) holds on its ``attempts``-th claim."""
    job = queued(kind)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        attempts=attempts,
        lease_owner="dead-host:123",
        lease_expires_at=ago(1) if expired else ago(-60),
        started_at=ago(120),
        resend_at=None,
    )
    copy(job, JobStatus.RUNNING)
    job.refresh_from_db()
    return job


def copy(job: Job, status: str) -> None:
    """Set the subject's copy of the status, as ``core.jobs`` keeps it."""
    policy = POLICIES[job.kind]
    policy.subject._default_manager.filter(pk=job.subject_id).update(
        **{policy.status_field: policy.copy(status)}
    )


def subject_status(job: Job) -> str:
    policy = POLICIES[job.kind]
    return str(
        policy.subject._default_manager.filter(pk=job.subject_id)
        .values_list(policy.status_field, flat=True)
        .get()
    )


# --- a worker that dies ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_watchdog_queues_again_a_job_whose_lease_expired(kind, sent):
    job = held(kind)

    assert jobs_recover()

    job.refresh_from_db()
    assert (job.status, job.lease_owner, job.lease_expires_at) == (JobStatus.QUEUED, "", None)
    assert job.attempts == 1  # counted again when it is claimed
    assert subject_status(job) == JobStatus.QUEUED
    assert sent == [(TASKS[kind], job.subject_id)]
    assert not jobs_recover()


@pytest.mark.parametrize("kind", KINDS)
def test_the_watchdog_leaves_a_job_whose_lease_is_renewed(kind, sent):
    job = held(kind, expired=False)

    assert not jobs_recover()

    job.refresh_from_db()
    assert job.status == subject_status(job) == JobStatus.RUNNING
    assert sent == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_watchdog_fails_a_job_whose_worker_stopped_on_its_last_attempt(kind, settings, sent):
    attempts = POLICIES[kind].max_attempts
    job = held(kind, attempts=attempts)

    assert jobs_recover()

    job.refresh_from_db()
    assert job.status == subject_status(job) == JobStatus.FAILED
    assert f"the worker {POLICIES[kind].doing} stopped {attempts} times" in job.error
    assert f"an organizer can {POLICIES[kind].retry}" in job.error
    assert (job.lease_owner, job.lease_expires_at) == ("", None)
    assert sent == []


def test_a_failed_build_takes_its_waiting_validation_with_it(sent):
    build = held(JobKind.BUILD, attempts=POLICIES[JobKind.BUILD].max_attempts)

    jobs_recover()

    revision = Revision.objects.get(pk=build.subject_id)
    assert (revision.build_status, revision.validation_status) == (
        StepStatus.FAILED,
        StepStatus.NONE,
    )
    validation = revision.job(JobKind.VALIDATION)
    assert validation is not None and validation.status == JobStatus.CANCELLED
    assert validation.error == "Not started: the build it waits for did not succeed."


@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_takes_over_an_expired_job_itself_and_counts_the_attempt(kind):
    job = held(kind, attempts=1)

    claimed = job_claim(kind=kind, subject_id=job.subject_id, worker="new:1")

    assert claimed is not None
    assert (claimed.attempts, claimed.lease_owner) == (2, "new:1")
    assert claimed.lease_expires_at > timezone.now()


@pytest.mark.parametrize("kind", KINDS)
def test_no_worker_claims_a_job_past_its_last_attempt_or_a_live_one(kind):
    spent = held(kind, attempts=POLICIES[kind].max_attempts)
    live = held(kind, expired=False)

    assert job_claim(kind=kind, subject_id=spent.subject_id, worker="new:1") is None
    assert job_claim(kind=kind, subject_id=live.subject_id, worker="new:1") is None


@pytest.mark.parametrize("kind", KINDS)
def test_of_two_workers_one_claims_a_queued_job(kind):
    job = queued(kind)

    first = job_claim(kind=kind, subject_id=job.subject_id, worker="one:1")
    second = job_claim(kind=kind, subject_id=job.subject_id, worker="two:2")

    assert first is not None and first.lease_owner == "one:1" and second is None
    assert subject_status(job) == JobStatus.RUNNING


@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_that_lost_its_lease_records_nothing(kind):
    job = queued(kind)
    lost = job_claim(kind=kind, subject_id=job.subject_id, worker="first:1")
    Job.objects.filter(pk=job.pk).update(lease_expires_at=ago(1))
    assert job_claim(kind=kind, subject_id=job.subject_id, worker="second:2") is not None
    stored: list[str] = []

    def store() -> Outcome:
        stored.append("first")
        return Outcome(succeeded=False, error="late")

    assert lost is not None and not job_record(job=lost, worker="first:1", store=store)

    job.refresh_from_db()
    assert stored == []
    assert (job.status, job.error, job.lease_owner) == (JobStatus.RUNNING, "", "second:2")
    assert job_record(job=job, worker="second:2", store=lambda: Outcome(succeeded=True, log="ok"))
    job.refresh_from_db()
    assert (job.status, job.log, job.lease_owner) == (JobStatus.SUCCEEDED, "ok", "")
    if not POLICIES[kind].stores_status:  # a duel's or evaluation's own store writes it
        assert subject_status(job) == JobStatus.SUCCEEDED


def test_the_heartbeat_keeps_a_long_job_from_being_taken_over(settings, sent):
    settings.ARENA_REVISION_LEASE_SECONDS = 1
    job = queued(JobKind.BUILD)
    claimed = job_claim(kind=JobKind.BUILD, subject_id=job.subject_id, worker="me:1")
    assert claimed is not None
    first_expiry = claimed.lease_expires_at

    with job_heartbeat(job=claimed, worker="me:1"):
        # Renewed every third of the lease: wait for a renewal, however loaded the machine.
        while Job.objects.get(pk=job.pk).lease_expires_at == first_expiry:
            threading.Event().wait(0.05)

    assert Job.objects.get(pk=job.pk).lease_expires_at > first_expiry


# --- a worker that cannot do it -------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_given_back_is_queued_again_then_failed_after_the_last_attempt(kind, sent):
    attempts = POLICIES[kind].max_attempts
    job = queued(kind)
    for attempt in range(1, attempts + 1):
        claimed = job_claim(kind=kind, subject_id=job.subject_id, worker=f"host-{attempt}:1")
        assert claimed is not None and claimed.attempts == attempt
        again = job_give_back(job=claimed, worker=f"host-{attempt}:1", problem="no disk left")
        assert again == (attempt < attempts)

    job.refresh_from_db()
    assert job.status == subject_status(job) == JobStatus.FAILED
    assert job.error.startswith(f"Not done after {attempts} attempts")
    assert job.error.endswith("The last: no disk left")


# --- an organizer's retry and cancel --------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_an_organizer_retries_a_failed_job_with_its_attempts_counted_afresh(kind, sent):
    job = held(kind, attempts=POLICIES[kind].max_attempts)
    jobs_recover()
    job.refresh_from_db()

    assert job_retry(job=job)
    assert not job_retry(job=job)  # of two organizers clicking at once, one acts

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (JobStatus.QUEUED, 0, "")
    assert subject_status(job) == JobStatus.QUEUED
    assert sent == [(TASKS[kind], job.subject_id)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_cancelled_job_is_not_claimed(kind):
    job = queued(kind)

    assert jobs_cancel(jobs=Job.objects.filter(pk=job.pk), why="not wanted") == 1

    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.CANCELLED, "not wanted")
    assert subject_status(job) == POLICIES[kind].copy(JobStatus.CANCELLED)
    assert job_claim(kind=kind, subject_id=job.subject_id, worker="late:1") is None


PLAYED = (JobKind.DUEL, JobKind.EVALUATION)


def _subject(job: Job) -> Duel | Evaluation:
    if job.kind == JobKind.DUEL:
        return Duel.objects.get(pk=job.subject_id)
    return Evaluation.objects.get(pk=job.subject_id)


@pytest.mark.parametrize("kind", PLAYED)
def test_a_retried_duel_or_evaluation_shows_no_time_or_error_of_its_last_try(kind, sent):
    job = held(kind, attempts=POLICIES[kind].max_attempts)
    jobs_recover()
    failed = _subject(job)
    assert failed.played.started_at is not None and failed.played.ended_at is not None
    assert "stopped" in failed.reported_error

    job.refresh_from_db()
    assert job_retry(job=job)

    again = _subject(job)
    assert again.played == (None, None)
    assert again.reported_error == ""
    assert (again.started_at, again.ended_at, again.error) == (None, None, "")


@pytest.mark.parametrize("kind", PLAYED)
def test_a_cancelled_duel_or_evaluation_says_why_from_its_job(kind):
    job = queued(kind)

    jobs_cancel(jobs=Job.objects.filter(pk=job.pk), why="Its tournament was cancelled.")

    cancelled = _subject(job)
    assert cancelled.reported_error == "Its tournament was cancelled."
    assert cancelled.error == ""  # the referee said nothing: it was not played
    assert cancelled.played.ended_at is not None


# --- a queue message that was lost ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_queued_too_long_is_sent_again_waiting_twice_as_long_each_time(kind, settings, sent):
    settings.ARENA_RESEND_AFTER_SECONDS = 60
    job = queued(kind)
    Job.objects.filter(pk=job.pk).update(resend_at=ago(1))

    assert jobs_recover()

    job.refresh_from_db()
    assert sent == [(TASKS[kind], job.subject_id)]
    assert (job.status, job.resends) == (JobStatus.QUEUED, 1)
    wait = (job.resend_at - timezone.now()).total_seconds()
    assert 115 < wait <= 120
    assert not jobs_recover()


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_no_worker_took_up_fails_after_the_last_resend(kind, settings, sent):
    settings.ARENA_MAX_RESENDS = 2
    job = queued(kind)
    Job.objects.filter(pk=job.pk).update(resend_at=ago(1), resends=2)

    assert jobs_recover()

    job.refresh_from_db()
    assert job.status == subject_status(job) == JobStatus.FAILED
    assert f"No worker took up {POLICIES[kind].doing}" in job.error
    assert "sent to the workers 3 times" in job.error
    assert sent == []


def test_a_validation_waiting_for_its_build_is_not_sent():
    revision = RevisionFactory(build_status=StepStatus.RUNNING)
    validation = revision.job(JobKind.VALIDATION)

    assert validation is not None and validation.resend_at is None
    assert not Job.objects.resend_due(timezone.now() + timedelta(days=365)).exists()


def test_the_watchdog_command_makes_one_pass_with_once(sent):
    lost = held(JobKind.BUILD)
    stalled = held(JobKind.DUEL)

    call_command("run_watchdog", "--once", verbosity=0)

    for job in (lost, stalled):
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED
    assert sorted(sent) == sorted(
        (TASKS[JobKind(job.kind)], job.subject_id) for job in (lost, stalled)
    )


# --- a validation waits for its build -------------------------------------------------------


def built(revision: Revision) -> None:
    """The build's worker records it built: the validation waiting for it is sent."""
    build = job_claim(kind=JobKind.BUILD, subject_id=revision.pk, worker="builder:1")
    assert build is not None
    assert job_record(job=build, worker="builder:1", store=lambda: Outcome(succeeded=True))


def test_a_validation_is_sent_once_its_build_succeeds_and_not_before(sent):
    revision = RevisionFactory()  # queued, as uploaded
    assert job_claim(kind=JobKind.VALIDATION, subject_id=revision.pk, worker="stray:1") is None

    built(revision)

    assert sent == [(TASKS[JobKind.VALIDATION], revision.pk)]
    assert (
        job_claim(kind=JobKind.VALIDATION, subject_id=revision.pk, worker="validator:1") is not None
    )


def test_a_rebuild_makes_the_validation_wait_again_whatever_message_is_left(sent):
    revision = RevisionFactory(validated=True)
    assert revision_revalidate(revision=revision)  # its message still on its way...
    assert revision_rebuild(revision=revision)

    # ...finds the validation waiting for the new build: it does not start.
    assert job_claim(kind=JobKind.VALIDATION, subject_id=revision.pk, worker="stray:1") is None
    revision.refresh_from_db()
    assert (revision.build_status, revision.validation_status) == ("queued", "queued")
    built(revision)
    assert (
        job_claim(kind=JobKind.VALIDATION, subject_id=revision.pk, worker="validator:1") is not None
    )


def test_a_rebuild_leaves_a_validation_a_live_worker_holds(sent):
    revision = RevisionFactory(validated=True)
    assert revision_revalidate(revision=revision)
    assert (
        job_claim(kind=JobKind.VALIDATION, subject_id=revision.pk, worker="validator:1") is not None
    )

    assert not revision_rebuild(revision=revision)

    validation = revision.job(JobKind.VALIDATION)
    assert validation is not None and validation.lease_owner == "validator:1"
    assert revision.job(JobKind.BUILD).status == JobStatus.SUCCEEDED


def test_retrying_a_failed_build_makes_its_validation_wait_again(sent):
    build = held(JobKind.BUILD, attempts=POLICIES[JobKind.BUILD].max_attempts)
    jobs_recover()
    build.refresh_from_db()

    assert job_retry(job=build)
    built(Revision.objects.get(pk=build.subject_id))

    revision = Revision.objects.get(pk=build.subject_id)
    assert (revision.build_status, revision.validation_status) == ("succeeded", "queued")
    assert (TASKS[JobKind.VALIDATION], revision.pk) in sent


def test_a_validation_is_not_retried_while_its_build_has_not_succeeded(sent):
    build = held(JobKind.BUILD, attempts=POLICIES[JobKind.BUILD].max_attempts)
    jobs_recover()
    validation = job_of(kind=JobKind.VALIDATION, subject_id=build.subject_id)
    assert validation is not None and validation.status == JobStatus.CANCELLED

    assert not job_retry(job=validation)
    assert (TASKS[JobKind.VALIDATION], build.subject_id) not in sent


def test_cancelling_a_build_cancels_the_validation_waiting_for_it():
    revision = RevisionFactory()

    jobs_cancel(jobs=Job.objects.of(JobKind.BUILD, revision.pk), why="not wanted")

    revision.refresh_from_db()
    assert (revision.build_status, revision.validation_status) == ("none", "none")
    assert revision.job(JobKind.VALIDATION).status == JobStatus.CANCELLED


def test_two_callers_making_the_same_job_at_once_make_one(sent):
    revision = RevisionFactory(validated=True)
    results = twice_at_once(lambda: job_reset(kind=JobKind.PUBLICATION, subject_id=revision.pk))

    assert results == [True, True]  # both queued it; one made it
    assert Job.objects.of(JobKind.PUBLICATION, revision.pk).count() == 1


def test_a_job_given_back_for_a_later_try_is_not_resent_before_it(settings, sent):
    job = queued(JobKind.PUBLICATION)
    claimed = job_claim(kind=JobKind.PUBLICATION, subject_id=job.subject_id, worker="publisher:1")
    assert claimed is not None

    assert job_give_back(
        job=claimed, worker="publisher:1", problem="refused", retry_in=60, log="git"
    )

    claimed.refresh_from_db()
    wait = (claimed.resend_at - timezone.now()).total_seconds()
    assert 55 < wait <= 60  # the watchdog sends it then, not before
    assert claimed.log == "git"
    assert not jobs_recover() and sent == []
    Job.objects.filter(pk=claimed.pk).update(resend_at=timezone.now() - timedelta(seconds=1))
    assert jobs_recover() and sent == [("publisher.tasks.publish_revision", job.subject_id)]


def test_a_claim_counts_the_resends_afresh(sent):
    job = queued(JobKind.DUEL)
    Job.objects.filter(pk=job.pk).update(resends=3)

    claimed = job_claim(kind=JobKind.DUEL, subject_id=job.subject_id, worker="late:1")

    assert claimed is not None and claimed.resends == 0


# --- the worker's side, written once ------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_work_that_raises_fails_its_job_with_the_cause_and_tells_its_app(kind, sent):
    job = queued(kind)
    told: list[Job] = []
    job_failed.connect(lambda sender, job, **_: told.append(job), weak=False, dispatch_uid=kind)

    def work(claimed: Claimed) -> Done:
        raise OSError(28, "No space left on device")

    try:
        with pytest.raises(OSError):
            job_run(kind=kind, subject_id=job.subject_id, work=work)
    finally:
        job_failed.disconnect(dispatch_uid=kind)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.lease_owner == ""
    assert f"Failed unexpectedly while {POLICIES[kind].doing}" in job.error
    assert "OSError: [Errno 28] No space left on device" in job.error
    policy = POLICIES[kind]
    subject = policy.subject._default_manager.get(pk=job.subject_id)
    assert getattr(subject, policy.status_field) == policy.copy(JobStatus.FAILED)
    assert [failed.pk for failed in told] == [job.pk]


@pytest.mark.parametrize("kind", KINDS)
def test_work_this_worker_cannot_do_is_given_back_for_the_watchdog_to_send(kind, sent):
    job = queued(kind)

    def work(claimed: Claimed) -> Done:
        raise GiveBack("no Docker engine on this host", retry_in=30, log="tried")

    assert not job_run(kind=kind, subject_id=job.subject_id, work=work)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner, job.log) == (
        JobStatus.QUEUED,
        1,
        "",
        "tried",
    )
    assert "did not finish (trying again later): no Docker engine on this host" in job.error
    assert 25 < (job.resend_at - timezone.now()).total_seconds() <= 30


def test_a_worker_handed_a_job_another_holds_does_nothing(sent):
    job = held(JobKind.DUEL, expired=False)
    ran: list[Job] = []

    def work(claimed: Claimed) -> Done:
        ran.append(claimed.job)
        return Done(store=lambda: Outcome(True))

    assert not job_run(kind=JobKind.DUEL, subject_id=job.subject_id, work=work)

    job.refresh_from_db()
    assert ran == [] and job.lease_owner == "dead-host:123" and job.attempts == 1


def test_what_follows_a_record_runs_only_when_this_worker_recorded_it(sent):
    job = queued(JobKind.DUEL)
    after: list[str] = []

    def work(claimed: Claimed) -> Done:
        # Taken over meanwhile: this worker's outcome is dropped.
        Job.objects.filter(pk=claimed.job.pk).update(lease_owner="took-over")
        return Done(store=lambda: Outcome(True), then=lambda: after.append("then"))

    assert not job_run(kind=JobKind.DUEL, subject_id=job.subject_id, work=work)
    assert after == []


WORKERS = [
    "builder/services.py",
    "duel_runner/services.py",
    "duel_runner/validation.py",
    "duel_runner/evaluations.py",
    "publisher/services.py",
]


@pytest.mark.parametrize("path", WORKERS)
def test_each_worker_keeps_only_its_work(path):
    """The claim, heartbeat, record and give-back are ``job_run``'s alone."""
    source = (Path(__file__).resolve().parents[2] / path).read_text()
    for call in ("job_claim(", "job_heartbeat(", "job_record(", "job_give_back(", "worker_name("):
        assert call not in source, f"{path} calls {call[:-1]} itself"
    assert "job_run(" in source
