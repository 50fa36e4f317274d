"""Background work as one record: a job, of one kind, about one subject.

A build, a validation or a publication of a revision, a duel and an evaluation are each
run by a Celery task on a worker. Their job row is what makes that work recoverable and
visible: its status, the attempts made, the lease of the worker that holds it, the
re-sends of its queue message, and its error and log. ``core.jobs`` holds the one
lifecycle every kind goes through; the subject's own row keeps what is its own (a duel's
players and outcome, a revision's build result) and a copy of the job's status that the
pages and standings filter on, written only by ``core.jobs`` in the same transaction.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.models.submissions import Revision, resend_at_default


class JobKind(models.TextChoices):
    BUILD = "build", "Build"
    VALIDATION = "validation", "Validation"
    PUBLICATION = "publication", "Publication"
    DUEL = "duel", "Duel"
    EVALUATION = "evaluation", "Evaluation"


#: The kinds whose subject is a revision, and the field that names each kind's subject.
REVISION_KINDS = (JobKind.BUILD, JobKind.VALIDATION, JobKind.PUBLICATION)
SUBJECT_FIELDS = {
    JobKind.BUILD: "revision",
    JobKind.VALIDATION: "revision",
    JobKind.PUBLICATION: "revision",
    JobKind.DUEL: "duel",
    JobKind.EVALUATION: "evaluation",
}


class JobStatus(models.TextChoices):
    """A job's status, and the copy its duel or evaluation keeps (``DuelStatus``)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


#: A job in one of these is over; nothing recovers or re-sends it.
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class JobQuerySet(models.QuerySet["Job"]):
    def of(self, kind: str, subject_id: int) -> JobQuerySet:
        """The job of ``kind`` about the subject with id ``subject_id``."""
        return self.filter(kind=kind, **{f"{SUBJECT_FIELDS[JobKind(kind)]}_id": subject_id})

    def claimable(self, now: datetime | None = None) -> JobQuerySet:
        """Queued jobs, and running ones whose worker lost its lease."""
        return self.filter(
            Q(status=JobStatus.QUEUED)
            | Q(status=JobStatus.RUNNING, lease_expires_at__lt=now or timezone.now())
        )

    def lease_expired(self, now: datetime | None = None) -> JobQuerySet:
        """Running jobs whose worker stopped renewing its lease (it died or stalled)."""
        return self.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now or timezone.now())

    def resend_due(self, now: datetime | None = None) -> JobQuerySet:
        """Queued jobs past their re-send time (their message may have been lost)."""
        return self.filter(status=JobStatus.QUEUED, resend_at__lt=now or timezone.now())


def _one_subject(kind: JobKind) -> Q:
    named = SUBJECT_FIELDS[kind]
    return Q(kind=kind) & Q(
        **{f"{field}__isnull": field != named for field in ("revision", "duel", "evaluation")}
    )


class Job(models.Model):
    """One piece of background work: its kind, its subject, and where it stands."""

    kind = models.CharField(max_length=16, choices=JobKind.choices)
    revision = models.ForeignKey(
        Revision, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    # By name: a duel's and an evaluation's models take their status from this module.
    duel = models.OneToOneField(
        "core.Duel", null=True, blank=True, on_delete=models.CASCADE, related_name="job"
    )
    evaluation = models.OneToOneField(
        "core.Evaluation", null=True, blank=True, on_delete=models.CASCADE, related_name="job"
    )

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    #: Claims made by workers (each counts, whether or not it finished).
    attempts = models.PositiveIntegerField(default=0)
    #: The worker (``host:pid``) that holds it while it runs, and until when.
    lease_owner = models.CharField(max_length=120, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    #: Times its queue message was sent again because it sat queued.
    resends = models.PositiveIntegerField(default=0)
    #: When the watchdog sends its queue message again if it is still queued.
    resend_at = models.DateTimeField(null=True, blank=True, default=resend_at_default)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    #: Why its last attempt did not finish, or why it failed.
    error = models.TextField(blank=True)
    log = models.TextField(blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"]),
            models.Index(fields=["status", "resend_at"]),
            models.Index(fields=["kind", "status"]),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=JobKind.values), name="job_kind_valid"),
            models.CheckConstraint(
                condition=Q(status__in=JobStatus.values), name="job_status_valid"
            ),
            models.CheckConstraint(
                condition=_one_subject(JobKind.BUILD)
                | _one_subject(JobKind.VALIDATION)
                | _one_subject(JobKind.PUBLICATION)
                | _one_subject(JobKind.DUEL)
                | _one_subject(JobKind.EVALUATION),
                name="job_subject_matches_kind",
            ),
            models.UniqueConstraint(
                fields=["kind", "revision"],
                condition=Q(revision__isnull=False),
                name="job_one_per_revision_step",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display().lower()} {self.subject_id}"

    @property
    def subject_id(self) -> int:
        return int(getattr(self, f"{SUBJECT_FIELDS[JobKind(self.kind)]}_id"))

    @property
    def duration(self) -> float | None:
        """Seconds from its start to its end; None until it ended."""
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED
