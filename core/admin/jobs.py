"""The job list: every piece of background work, of every kind, in one place, with the
actions that retry a failed job and cancel a queued one (``core.jobs``)."""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin.base import (
    EMPTY,
    ReadOnlyAdmin,
    admin_link,
    preformatted,
    seconds,
    status_badge,
)
from core.errors import ArenaError
from core.jobs.lifecycle import job_retry, jobs_cancel
from core.models import Duel, Evaluation, Job


def job_summary(job: Job | None) -> str:
    """A subject's job in a line: its status, attempts and re-sends, linked to its page."""
    if job is None:
        return EMPTY
    text = f"{job.get_status_display()}, {job.attempts} attempt(s)"
    if job.resends:
        text += f", re-sent {job.resends}x"
    if job.lease_owner:
        text += f", held by {job.lease_owner}"
    return admin_link(job, text)


class JobColumns:
    """The admin columns of a subject's job (a duel's, an evaluation's); none for a
    validation's, which was its revision's job."""

    @admin.display(description="job")
    def job_link(self, subject: object) -> str:
        return job_summary(getattr(subject, "job", None))

    @admin.display(description="attempts", ordering="job__attempts")
    def job_attempts(self, subject: object) -> str:
        job = getattr(subject, "job", None)
        return EMPTY if job is None else str(job.attempts)

    @admin.display(description="started at", ordering="job__started_at")
    def started(self, subject: Duel | Evaluation) -> datetime | None:
        return subject.played.started_at

    @admin.display(description="ended at", ordering="job__ended_at")
    def ended(self, subject: Duel | Evaluation) -> datetime | None:
        return subject.played.ended_at

    @admin.display(description="duration")
    def duration(self, subject: Duel | Evaluation) -> str:
        played = subject.played.seconds
        return EMPTY if played is None else seconds(played)

    @admin.display(description="error")
    def error_text(self, subject: Duel | Evaluation) -> str:
        return preformatted(subject.reported_error)


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "kind",
        "subject",
        "status_badge",
        "attempts",
        "resends",
        "lease_owner",
        "created_at",
        "duration",
    )
    list_filter = ("kind", "status")
    search_fields = ("lease_owner", "error", "revision__competitor__name")
    list_select_related = ("revision__competitor", "duel", "evaluation")
    date_hierarchy = "created_at"
    actions = ("retry", "cancel")
    fields = (
        "kind",
        "subject",
        "status_badge",
        "attempts",
        "lease_owner",
        "lease_expires_at",
        "resends",
        "resend_at",
        "created_at",
        "started_at",
        "ended_at",
        "duration",
        "error_text",
        "log_text",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        # A duel is named by its players.
        return super().get_queryset(request).prefetch_related("duel__seats__revision__competitor")

    @admin.display(description="subject")
    def subject(self, job: Job) -> str:
        subject = job.revision or job.duel or job.evaluation
        return admin_link(subject)

    @admin.display(description="status", ordering="status")
    def status_badge(self, job: Job) -> str:
        return status_badge(job.status, job.get_status_display())

    @admin.display(description="took")
    def duration(self, job: Job) -> str:
        return seconds(job.duration)

    @admin.display(description="error")
    def error_text(self, job: Job) -> str:
        return preformatted(job.error)

    @admin.display(description="log")
    def log_text(self, job: Job) -> str:
        return preformatted(job.log)

    @admin.action(description="Retry the selected failed or cancelled jobs")
    def retry(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        def retry_one(job: Job) -> str | None:
            if not job_retry(job=job):
                raise ArenaError(
                    f"it is {job.get_status_display().lower()}: only a failed or cancelled "
                    "job can be retried"
                )
            return None

        self.run_each(request, queryset, retry_one, done="Queued again")

    @admin.action(description="Cancel the selected queued or running jobs")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        def cancel_one(job: Job) -> str | None:
            if not jobs_cancel(
                jobs=Job.objects.filter(pk=job.pk), why="Cancelled by an organizer.", running=True
            ):
                raise ArenaError(
                    f"it is {job.get_status_display().lower()}: only a queued or running "
                    "job can be cancelled"
                )
            return None

        self.run_each(request, queryset, cancel_one, done="Cancelled")


__all__ = ["JobAdmin", "JobColumns", "job_summary"]
