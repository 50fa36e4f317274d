from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class Role(models.TextChoices):
    ATTENDEE = "attendee", "Attendee"
    ORGANIZER = "organizer", "Organizer"


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields: object) -> User:
        if not email:
            raise ValueError("an e-mail address is required")
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        user.admin_access_from_role()
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields: object) -> User:
        fields.update(is_staff=True, is_superuser=True, role=Role.ORGANIZER)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A person: logs in with an e-mail address; organizers run the admin."""

    email = models.EmailField(unique=True)
    display_name = models.CharField(max_length=80)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ATTENDEE)
    #: Free text shown beside the person's name (a school, a company); a competition's
    #: teams are ``core.models.teams.Team``.
    team = models.CharField(
        "affiliation",
        max_length=80,
        blank=True,
        help_text="Shown beside the name (a school, a lab, a company). Not a competition's "
        "team: those are formed on the competition's page.",
    )
    is_active = models.BooleanField(default=True)
    #: May use the admin; organizers have it, set together with the role.
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = ["display_name"]

    class Meta:
        ordering = ["display_name", "email"]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=Role.values), name="user_role_valid"),
        ]

    def __str__(self) -> str:
        return self.display_name or self.email

    @property
    def is_organizer(self) -> bool:
        return self.role == Role.ORGANIZER or self.is_superuser

    def admin_access_from_role(self) -> None:
        """Admin access goes with the role: organizers (and superusers) may use it."""
        self.is_staff = self.is_organizer


class InviteCode(models.Model):
    """What a newcomer types to register; organizers create and limit them."""

    code = models.CharField(max_length=64, unique=True)
    note = models.CharField(max_length=200, blank=True)
    max_uses = models.PositiveIntegerField(default=100)
    used_count = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(used_count__lte=F("max_uses")), name="invite_uses_within_limit"
            ),
        ]

    def __str__(self) -> str:
        return self.code

    def is_usable(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return (
            self.is_active
            and self.used_count < self.max_uses
            and (self.expires_at is None or self.expires_at > now)
        )


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do: ``read`` (everything the user may see), ``submit`` (upload and
    delete submissions), ``play`` (online play)."""

    READ = "read", "Read"
    SUBMIT = "submit", "Submit agents"
    PLAY = "play", "Play online"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A named API token; only its hash is stored, the secret is shown once."""

    PREFIX = "arena_"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    #: The first characters of the secret, to tell tokens apart in lists.
    hint = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64, unique=True)
    #: Space-separated ``TokenScope`` values.
    scopes = models.CharField(max_length=64, default=TokenScope.READ)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: A model token: it speaks for this online competitor only (``/api/v1/online/``).
    competitor = models.ForeignKey(
        "core.Competitor",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="model_tokens",
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=Q(revoked_at__isnull=True),
                name="api_token_name_unique_while_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @classmethod
    def new_secret(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(self.scopes.split())
