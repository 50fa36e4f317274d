"""Competitions: an organizer's event over one game, with a schedule.

A competition is a schedule over what Arena already runs (``core.models.tournaments``):
phases, each with its rules (uploads open or closed, submission limits per team, what
plays, whether its standings are public), teams that own its competitors
(``core.models.teams``), the revisions each team marks final, and a final tournament of
those that the tournament manager launches by itself at the deadline.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from core.models.submissions import Environment, Revision
from core.models.tournaments import Tournament, TournamentFormat


class Competition(models.Model):
    """An event over one game: who may enter, its phases, its final."""

    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="competitions"
    )
    slug = models.SlugField(max_length=64, unique=True, help_text="Its address: /c/<slug>/.")
    title = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    is_public = models.BooleanField(
        default=True, help_text="Listed and open to everyone; otherwise organizers only."
    )
    team_size_limit = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1)], help_text="Members of a team, at most."
    )
    final_submissions = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1)],
        help_text=(
            "Revisions a team may mark final (one per agent). A team that marks none "
            "plays the final with its newest validated revision."
        ),
    )
    final_format = models.CharField(
        max_length=16,
        choices=TournamentFormat.choices,
        default=TournamentFormat.ROUND_ROBIN,
        help_text="The final tournament's format.",
    )
    final_matches_per_duel = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Matches in each duel of the final; empty: the game's default.",
    )
    final_rounds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Swiss: its rounds (required). Ladder: the duels it plays before it ends "
        "(required: the final's ladder has a fixed length).",
    )
    final_hidden = models.BooleanField(
        default=False,
        help_text=(
            "Held out: the final's standings stay hidden, to everyone but the organizers, "
            "until they publish them (admin action). Otherwise they are published when "
            "it ends."
        ),
    )
    reference_revisions = models.ManyToManyField(
        Revision,
        blank=True,
        related_name="+",
        help_text=(
            "Reference agents that play the final beside the teams' final revisions (the "
            "organizers' own, kept private: they play no development ladder of the "
            "competition)."
        ),
    )
    final_tournament = models.OneToOneField(
        Tournament,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="competition",
        editable=False,
    )
    #: Why the final could not be launched at the deadline (too few entries...).
    final_error = models.TextField(blank=True, editable=False)
    final_published_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(final_format__in=TournamentFormat.values),
                name="competition_final_format_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("competition", args=[self.slug])

    def phase_at(self, when: datetime | None = None) -> CompetitionPhase | None:
        """The phase running at ``when`` (now): the last one started; None before the first."""
        when = when or timezone.now()
        return self.phases.filter(starts_at__lte=when).order_by("-starts_at").first()

    def next_phase(self, when: datetime | None = None) -> CompetitionPhase | None:
        when = when or timezone.now()
        return self.phases.filter(starts_at__gt=when).order_by("starts_at").first()

    @property
    def final_phase(self) -> CompetitionPhase | None:
        return self.phases.filter(plays=PhasePlays.FINAL).order_by("starts_at").first()

    @property
    def deadline(self) -> datetime | None:
        """When uploads close and the final starts: its final phase's start."""
        final = self.final_phase
        return final.starts_at if final else None

    @property
    def is_published(self) -> bool:
        return self.final_published_at is not None


class PhasePlays(models.TextChoices):
    """What plays during a phase."""

    #: The game's standing ladder, where every validated revision is rated; the
    #: competition shows its standings for the teams' agents.
    LADDER = "ladder", "The game's ladder (rated with everyone)"
    #: A ladder of the competition's own, which only its teams' agents join, opened at the
    #: phase's start and stopped at its end (``Tournament.entrants``).
    OWN_LADDER = "own_ladder", "A ladder of its teams' agents only"
    #: The final tournament of the teams' final revisions, launched at the phase's start.
    FINAL = "final", "The final tournament"
    NOTHING = "nothing", "Nothing"


class CompetitionPhase(models.Model):
    """A stretch of a competition from ``starts_at`` to the next phase's start, with its
    rules. The first phase's start opens the competition; a final phase's start is its
    deadline."""

    competition = models.ForeignKey(Competition, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=80)
    starts_at = models.DateTimeField()
    uploads_open = models.BooleanField(default=True)
    daily_limit = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Uploads per team per day (UTC), at most; empty: no limit.",
    )
    total_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Uploads per team in this phase, at most; empty: no limit.",
    )
    plays = models.CharField(max_length=10, choices=PhasePlays.choices, default=PhasePlays.LADDER)
    standings_public = models.BooleanField(
        default=True,
        help_text="Its standings are shown to everyone; otherwise to the organizers only "
        "(each team still sees its own place).",
    )

    class Meta:
        ordering = ["competition", "starts_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["competition", "starts_at"],
                name="competition_phase_start_unique",
                violation_error_message="Two phases cannot start at the same time.",
            ),
            models.CheckConstraint(
                condition=Q(plays__in=PhasePlays.values), name="competition_phase_plays_valid"
            ),
            models.CheckConstraint(
                condition=~Q(plays=PhasePlays.FINAL) | Q(uploads_open=False),
                name="competition_final_phase_closes_uploads",
                violation_error_message="The final phase closes uploads: untick “uploads open”.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.competition}: {self.name}"
