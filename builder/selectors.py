"""Reads of the builder: which revisions still need their images."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from django.db.models import Max

from core.models import (
    DuelSeat,
    DuelStatus,
    Participant,
    Revision,
    StepStatus,
    TournamentStatus,
)

BUSY = (StepStatus.QUEUED, StepStatus.RUNNING)


@dataclasses.dataclass(frozen=True)
class RevisionImageUse:
    """What a revision needs of its images."""

    #: The tag of its current image ('' if the last build made none).
    image: str
    #: Being built: its new image exists before its tag is stored, so every image stays.
    building: bool
    #: Why its current image is no longer needed; None while it is.
    removal_reason: str | None


def revision_image_uses(*, revision_ids: Collection[int]) -> dict[int, RevisionImageUse]:
    """For each of these revisions that still exists, whether its image must stay.

    It must while the revision is validated next, while a queued or running duel plays
    it, while it is the newest validated revision of its competitor (the one entered in
    new tournaments), or while it is entered in a tournament that is not finished.
    """
    revisions = list(Revision.objects.filter(pk__in=revision_ids).select_related("competitor"))
    competitors = {revision.competitor_id for revision in revisions}
    newest_versions = dict(
        Revision.objects.validated()
        .filter(competitor__in=competitors)
        .values("competitor")
        .annotate(newest=Max("version"))
        .values_list("competitor", "newest")
    )
    playing = set(
        DuelSeat.objects.filter(
            revision__in=revision_ids, duel__status__in=(DuelStatus.QUEUED, DuelStatus.RUNNING)
        ).values_list("revision", flat=True)
    )
    entered = set(
        Participant.objects.filter(
            revision__in=revision_ids,
            tournament__status__in=(TournamentStatus.DRAFT, TournamentStatus.RUNNING),
        ).values_list("revision", flat=True)
    )
    uses: dict[int, RevisionImageUse] = {}
    for revision in revisions:
        newest = newest_versions.get(revision.competitor_id)
        reason: str | None
        if revision.pk in playing or revision.validation_status in BUSY:
            reason = None
        elif revision.is_disabled or revision.competitor.is_disabled:
            reason = "its revision or competitor is disabled"
        elif newest == revision.version or revision.pk in entered:
            reason = None
        elif newest is not None and newest > revision.version:
            reason = f"v{newest} of the competitor superseded it"
        else:
            reason = "it did not pass validation"
        uses[revision.pk] = RevisionImageUse(
            image=revision.image,
            building=revision.build_status in BUSY,
            removal_reason=reason,
        )
    return uses
