"""Publication of public submissions: whether a revision may be published, and its
publication job queued."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from core.jobs.lifecycle import idle, job_reset
from core.models import (
    Competitor,
    JobKind,
    JobStatus,
    Revision,
)


def revision_publication_problem(revision: Revision) -> str:
    """Why the revision cannot be published now, or '' when it can."""
    competitor = revision.competitor
    if not settings.ARENA_PUBLISH_REPOSITORY:
        return "publishing is off (ARENA_PUBLISH_REPOSITORY is not set)"
    if not competitor.is_public:
        return "its competitor is private; make it public first"
    if competitor.is_disabled:
        return "its competitor is disabled"
    if revision.is_disabled:
        return "it is disabled"
    if not revision.is_valid:
        return "it has not passed its build and validation"
    return ""


def revision_publication_queue(*, revision: Revision) -> bool:
    """Queue the publication of a validated revision of a public competitor and start it.

    Nothing happens (False) when publishing is off, the competitor is private, or the
    revision is published, queued or being published already; a failed one is queued again.
    """
    if revision_publication_problem(revision):
        return False
    # Conditional, so a revision validated twice in a row is queued once.
    return job_reset(
        kind=JobKind.PUBLICATION,
        subject_id=revision.pk,
        when=Q(status__in=[JobStatus.FAILED, JobStatus.CANCELLED]),
    )


def revision_republish(*, revision: Revision) -> bool:
    """An organizer's re-publication, whatever became of the last one, unless it is queued
    or a live worker is publishing it (one whose lease ran out was killed: taken over).
    Returns whether it was queued."""
    queued = job_reset(kind=JobKind.PUBLICATION, subject_id=revision.pk, when=idle())
    revision.refresh_from_db()
    return queued


def competitor_publish_latest(*, competitor: Competitor) -> Revision | None:
    """Queue the publication of the competitor's newest validated revision (it has just been
    made public). The revision queued, or None when there is none to publish."""
    revision = (
        competitor.revisions.validated()
        .select_related("competitor__environment", "competitor__owner")
        .order_by("-version")
        .first()
    )
    if revision is None or not revision_publication_queue(revision=revision):
        return None
    return revision
