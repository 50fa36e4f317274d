"""The website's workflows: uploads, registration with an invite code, API tokens
(created by ``core.accounts.api_token_create``, re-exported here)."""

from __future__ import annotations

import dataclasses

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.accounts import api_token_create, user_create
from core.errors import ArenaError
from core.models import (
    ApiToken,
    Duel,
    Environment,
    InviteCode,
    LeaderboardEntry,
    Participant,
    RatingChange,
    Revision,
    StepStatus,
    User,
)
from core.models.submissions import STEPS
from core.services import competitor_get_or_create, revision_create, upload_content_release
from core.uploads import upload_limits


def revision_upload(
    *,
    owner: User,
    environment: Environment,
    competitor_name: str,
    is_public: bool,
    filename: str,
    content: bytes,
) -> Revision:
    """The next revision of the owner's competitor, created with the competitor if new.

    One transaction: when the upload is refused (ArenaError, UploadRejected) a competitor
    created for it disappears too, so a refused upload leaves no row behind. The build
    starts once the transaction commits.
    """
    with transaction.atomic():
        competitor = competitor_get_or_create(
            owner=owner, environment=environment, name=competitor_name, is_public=is_public
        )
        return revision_create(
            competitor=competitor,
            uploaded_by=owner,
            filename=filename,
            content=content,
            limits=upload_limits(),
        )


@dataclasses.dataclass(frozen=True)
class RevisionDeletion:
    #: The withdrawn (disabled) revision; None once it is erased.
    kept: Revision | None
    #: Why it was withdrawn rather than erased ("" when erased).
    reason: str

    @property
    def erased(self) -> bool:
        return self.kept is None


def _why_kept(revision: Revision) -> str:
    """Why erasing the revision would lose someone else's data, or break a worker; ''
    when nothing but its own validation refers to it."""
    if any(getattr(revision, f"{step}_status") == StepStatus.RUNNING for step in STEPS):
        # The worker holding the step would write to a row that is gone.
        return "a worker is building, validating or publishing it"
    if Participant.objects.filter(revision=revision).exists():
        return "it is entered in a tournament (its standings keep it)"
    if Duel.objects.of_revision(revision).filter(is_validation=False).exists():
        return "it played duels (its opponents' results and replays keep it)"
    if LeaderboardEntry.objects.filter(revision=revision).exists():
        return "it is on the leaderboard"
    if RatingChange.objects.filter(duel__in=Duel.objects.of_revision(revision)).exists():
        return "its matches changed ratings"
    return ""


def revision_delete(*, revision: Revision) -> RevisionDeletion:
    """The owner's delete: erase a revision nothing else depends on, else withdraw it.

    Erased: the row, its validation duels (self-play, with their matches) and its stored
    upload; the competitor too when it has no revision left, which frees its name. A
    revision that other rows keep (tournaments, duels against others, the leaderboard,
    rating changes), or whose step a worker holds, is disabled instead: it plays no more
    and leaves the tournaments it is in (the tournament manager withdraws it), while
    everything it played stays. Deleting a withdrawn revision again erases it once nothing
    keeps it any more.
    """
    with transaction.atomic():
        # Locked, so that between the checks below and the delete no worker claims a step
        # of it (claims are UPDATEs of this row), no duel or entry comes to refer to it (a
        # foreign key check waits on the lock), and no upload adds a revision to the
        # competitor (uploads lock the competitor's row).
        revision = (
            Revision.objects.select_for_update(of=("self", "competitor"))
            .select_related("competitor__environment", "competitor__owner")
            .get(pk=revision.pk)
        )
        reason = _why_kept(revision)
        if reason:
            Revision.objects.filter(pk=revision.pk).update(is_disabled=True)
            revision.is_disabled = True
            return RevisionDeletion(kept=revision, reason=reason)
        upload, storage = revision.source.name, revision.source.storage
        content = revision.upload_id
        competitor = revision.competitor
        Duel.objects.of_revision(revision).filter(is_validation=True).delete()
        revision.delete()
        if not competitor.revisions.exists():
            competitor.delete()
        if upload:
            transaction.on_commit(lambda: storage.delete(upload))
        if content:
            # Other revisions may share the same bytes: they go with the last of them.
            transaction.on_commit(lambda: upload_content_release(sha256=content))
    return RevisionDeletion(kept=None, reason="")


def invite_problem(invite: InviteCode | None) -> str:
    """Why an invite code cannot be used now, or '' when it can."""
    if invite is None:
        return "This invite code does not exist; check the code you were given."
    if not invite.is_active:
        return "This invite code has been withdrawn; ask the organizers for a new one."
    if invite.expires_at is not None and invite.expires_at <= timezone.now():
        return "This invite code has expired; ask the organizers for a new one."
    if invite.used_count >= invite.max_uses:
        return "This invite code has been used up; ask the organizers for a new one."
    return ""


def user_register(*, code: str, email: str, display_name: str, team: str, password: str) -> User:
    """A new attendee account, counting one use of the invite code.

    The use is counted with a conditional UPDATE, so two people racing for the last use of
    a code cannot both get it.
    """
    with transaction.atomic():
        counted = (
            InviteCode.objects.filter(code=code, is_active=True, used_count__lt=F("max_uses"))
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
            .update(used_count=F("used_count") + 1)
        )
        if not counted:
            problem = invite_problem(InviteCode.objects.filter(code=code).first())
            raise ArenaError(problem or "This invite code cannot be used; ask the organizers.")
        return user_create(email=email, display_name=display_name, team=team, password=password)


def api_token_revoke(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


__all__ = ["api_token_create"]
