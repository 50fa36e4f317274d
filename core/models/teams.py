"""Teams: who enters a competition together (``core.services.teams``).

A team belongs to one competition and owns the competitors entered in it: each of its
members may upload their new versions, read their private logs and manage them. A person
who enters alone is a team of one, made for them on their first upload.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.models.competitions import Competition

#: How long an invitation may be accepted.
INVITATION_DAYS = 7


class Team(models.Model):
    competition = models.ForeignKey(Competition, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=80)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: Out of the competition by the organizers' decision: its competitors are disabled
    #: (they leave every ladder) and it plays no final.
    disqualified_at = models.DateTimeField(null=True, blank=True, editable=False)
    disqualified_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["competition", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["competition", "name"], name="team_name_unique_per_competition"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_disqualified(self) -> bool:
        return self.disqualified_at is not None


class TeamMember(models.Model):
    """A person in a team; one team per person per competition."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    #: The team's competition again, so that the database holds the one-team rule.
    competition = models.ForeignKey(Competition, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "joined_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["competition", "user"], name="team_member_one_team_per_competition"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


def hash_invitation(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class TeamInvitation(models.Model):
    """An invitation to join a team: by link (anyone who has its code, until it is used
    or expires) or for one e-mail address (only that person may accept it). Only the
    code's hash is stored."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    #: Empty for a link: whoever has the code.
    email = models.EmailField(blank=True)
    code_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(accepted_at__isnull=True) | Q(accepted_by__isnull=False),
                name="team_invitation_accepted_by_someone",
            ),
        ]

    def __str__(self) -> str:
        return f"invitation to {self.team}" + (f" for {self.email}" if self.email else "")

    @staticmethod
    def new_code() -> str:
        return secrets.token_urlsafe(18)

    @staticmethod
    def default_expiry() -> timedelta:
        return timedelta(days=INVITATION_DAYS)

    def is_open(self) -> bool:
        return (
            self.accepted_at is None
            and self.revoked_at is None
            and self.expires_at > timezone.now()
        )
