"""The website's workflows: uploads, registration with an invite code, API tokens
(created by ``core.accounts.api_token_create``, re-exported here)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.accounts import api_token_create, user_create
from core.errors import ArenaError
from core.models import ApiToken, Environment, InviteCode, Revision, User
from core.services import competitor_get_or_create, revision_create
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
