"""Creating accounts: ``user_create`` is the one way, for the commands (one by one, from a
CSV file, the demo accounts) and registration on the site; the admin's form runs the same
checks through Django's.

Checks come first and raise ArenaError with what to fix, so a bad account is never
half-created.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.errors import ArenaError
from core.models import ApiToken, Competitor, InviteCode, Role, TokenScope, User
from core.models.accounts import hash_token

#: Characters of a token's secret kept in clear, to tell tokens apart in lists.
TOKEN_HINT_CHARS = 10


def random_password() -> str:
    return secrets.token_urlsafe(12)


def email_check(email: str) -> str:
    """The normalised address; raises ArenaError if it is invalid or taken."""
    email = User.objects.normalize_email(email.strip()).lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ArenaError(f"{email!r} is not a valid e-mail address") from None
    if User.objects.filter(email__iexact=email).exists():
        raise ArenaError(f"a user with the e-mail address {email} already exists")
    return email


def role_check(role: str) -> str:
    role = (role or Role.ATTENDEE).strip().lower()
    if role not in Role.values:
        raise ArenaError(f"unknown role {role!r}; use one of: {', '.join(Role.values)}")
    return role


def display_name_check(display_name: str) -> str:
    display_name = display_name.strip()
    if not display_name:
        raise ArenaError("a display name is required")
    if len(display_name) > User._meta.get_field("display_name").max_length:  # type: ignore[operator]
        raise ArenaError("the display name is too long (80 characters at most)")
    return display_name


def password_check(password: str, *, email: str, display_name: str) -> None:
    if not password:
        raise ArenaError("the password is empty")
    try:
        validate_password(password, User(email=email, display_name=display_name))
    except ValidationError as error:
        raise ArenaError("weak password: " + " ".join(error.messages)) from None


def user_create(
    *, email: str, display_name: str, role: str = Role.ATTENDEE, team: str = "", password: str
) -> User:
    """Check everything, then create the user; organizers get admin access with the role."""
    email = email_check(email)
    display_name = display_name_check(display_name)
    role = role_check(role)
    team = team.strip()
    if len(team) > User._meta.get_field("team").max_length:  # type: ignore[operator]
        raise ArenaError("the team name is too long (80 characters at most)")
    password_check(password, email=email, display_name=display_name)
    with transaction.atomic():
        return User.objects.create_user(
            email,
            password,
            display_name=display_name,
            role=role,
            team=team,
        )


def user_create_or_reset(
    *, email: str, display_name: str, role: str, password: str
) -> tuple[User, bool]:
    """The account with this e-mail address: created (``user_create``) or, when it exists,
    given this password and role and made active again (its name is kept), as for the
    accounts a command owns (the demo's). Returns it and whether it was created."""
    user = User.objects.filter(email=email).first()
    if user is None:
        user = user_create(email=email, display_name=display_name, role=role, password=password)
        return user, True
    user.set_password(password)
    user.role, user.is_active = role, True
    user.admin_access_from_role()
    user.save(update_fields=["password", "role", "is_active", "is_staff"])
    return user, False


def api_token_create(
    *,
    user: User,
    name: str,
    scopes: Iterable[str] = (TokenScope.READ,),
    competitor: Competitor | None = None,
) -> tuple[ApiToken, str]:
    """A new token and its secret, which is stored only as a hash: show it once. With
    ``competitor`` (an online one), a model token that speaks for it alone."""
    if user.api_tokens.active().filter(name=name).exists():
        raise ArenaError(f"You already have a token named {name!r}; choose another name.")
    chosen = [scope for scope in TokenScope.values if scope in set(scopes)]
    unknown = sorted(set(scopes) - set(TokenScope.values))
    if unknown or not chosen:
        raise ArenaError(
            f"Choose the token's scopes among {', '.join(TokenScope.values)}"
            + (f" (not {', '.join(unknown)})." if unknown else ".")
        )
    secret = ApiToken.new_secret()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        hint=secret[:TOKEN_HINT_CHARS],
        token_hash=hash_token(secret),
        scopes=" ".join(chosen),
        competitor=competitor,
    )
    return token, secret


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


def invite_code_get_or_create(*, code: str, note: str, created_by: User) -> tuple[InviteCode, bool]:
    """The invite code ``code``, created with ``note`` when new; an existing one is left as
    it is, usable or not (``InviteCode.is_usable``). Returns it and whether it was created."""
    return InviteCode.objects.get_or_create(
        code=code, defaults={"note": note, "created_by": created_by}
    )


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
