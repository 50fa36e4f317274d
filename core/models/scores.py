"""Score competitions: agents of a one-player game, each evaluated on the same seeded
episodes and ranked by mean return (``referee.evaluation``, ``referee.scores``)."""

from __future__ import annotations

import random

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from core.models.submissions import Competitor, CompetitorKind, Environment, Revision
from core.models.tournaments import DuelSeat, DuelStatus, Refereed
from referee.scores import episode_seeds

#: Episodes per agent at most: an evaluation is one task, within ARENA_DUEL_TIMEOUT_SECONDS.
MAX_EPISODES = 1000


def _new_seed() -> int:
    return random.SystemRandom().randrange(2**31)


class ScoreCompetition(models.Model):
    """A leaderboard of returns in a one-player environment: every entrant's newest
    validated revision plays the episodes of ``seed`` (the same for all of them)."""

    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="score_competitions"
    )
    name = models.CharField(max_length=120)
    episodes = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(MAX_EPISODES)],
        help_text="Episodes each agent plays; the environment's matches per duel by default.",
    )
    seed = models.BigIntegerField(
        default=_new_seed,
        validators=[MinValueValidator(0), MaxValueValidator(2**31 - 1)],
        help_text="Draws the episodes' seeds, the same for every agent.",
    )
    is_public = models.BooleanField(default=True)
    #: Online agents and LLM players entered by their owners (``core.services.scores``): hosted
    #: agents need no entry, their newest validated revision plays.
    entered = models.ManyToManyField(
        Competitor, blank=True, related_name="score_competitions_entered"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: The environment's standing score competition (``Environment.standing_competition``),
    #: opened by the tournament manager, which evaluates each newly validated revision of
    #: a hosted agent in it.
    is_standing = models.BooleanField(default=False, editable=False)
    #: When an organizer last started (or re-ran) its evaluations; None for a draft.
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(episodes__gte=1), name="score_competition_episodes_positive"
            ),
            models.CheckConstraint(
                condition=Q(seed__gte=0), name="score_competition_seed_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("score_competition", args=[self.pk])

    @property
    def seeds(self) -> list[int]:
        return episode_seeds(self.seed, self.episodes)


#: Competitors that play through a remote seat on the seat bus (``Competitor.has_seat``).
SEAT_KINDS = (CompetitorKind.ONLINE, CompetitorKind.HUMAN)
#: Competitors that enter a score competition only when their owners enter them.
ENTERED_KINDS = (CompetitorKind.ONLINE, CompetitorKind.LLM)


class EvaluationQuerySet(models.QuerySet["Evaluation"]):
    def with_online_seat(self) -> EvaluationQuerySet:
        """Played by an online agent (refereed where the seat bus reaches)."""
        return self.filter(revision__competitor__kind__in=SEAT_KINDS)

    def with_llm_seat(self) -> EvaluationQuerySet:
        """Played by an LLM player (mostly waiting on its server)."""
        return self.filter(revision__competitor__kind=CompetitorKind.LLM)

    def active(self) -> EvaluationQuerySet:
        return self.filter(status__in=(DuelStatus.QUEUED, DuelStatus.RUNNING))

    def seat_busy(self) -> EvaluationQuerySet:
        """Those of an online agent now playing a duel: a seat plays one game at a time."""
        playing = DuelSeat.objects.filter(
            duel__status=DuelStatus.RUNNING,
            revision__competitor=models.OuterRef("revision__competitor"),
        )
        return self.with_online_seat().filter(models.Exists(playing))


class Evaluation(Refereed, models.Model):
    """One revision playing a list of seeded episodes, alone: for a score competition, or
    (``is_validation``, no competition) to validate a one-player upload. Claimed with a
    lease and recorded only by the lease's owner, as duels are (``core.jobs``)."""

    competition = models.ForeignKey(
        ScoreCompetition,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="evaluations",
    )
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="evaluations")
    is_validation = models.BooleanField(default=False)
    seeds = models.JSONField(default=list)

    #: A copy of its job's status (``core.jobs``); a validation's evaluation has no job.
    status = models.CharField(max_length=16, choices=DuelStatus.choices, default=DuelStatus.QUEUED)
    played_by = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    #: A validation's evaluation's times; one of its own has its job's (``played``).
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    #: The referee's word: faulty episodes, or why it could not be played (the job's
    #: error says why it failed or was cancelled unplayed: ``reported_error``).
    error = models.TextField(blank=True)

    #: Mean return and its 95 % Student-t interval (None with fewer than two episodes).
    mean_return = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    episodes_played = models.PositiveIntegerField(default=0)
    faulty_episodes = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)
    #: One document per episode (``referee.evaluation.EpisodeRecord.as_json``): seed,
    #: actions, return, steps, faults, timings (and an LLM seat's conversation); the
    #: seed and actions replay it.
    episodes = models.JSONField(default=list)
    log = models.TextField(blank=True)

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=DuelStatus.values), name="evaluation_status_valid"
            ),
            models.UniqueConstraint(
                fields=["competition", "revision"],
                condition=Q(competition__isnull=False),
                name="evaluation_once_per_competition",
            ),
            models.CheckConstraint(
                condition=Q(competition__isnull=True) | Q(is_validation=False),
                name="evaluation_validation_has_no_competition",
            ),
            models.CheckConstraint(
                condition=~Q(status=DuelStatus.SUCCEEDED) | Q(mean_return__isnull=False),
                name="evaluation_succeeded_has_mean",
            ),
        ]

    def __str__(self) -> str:
        where = "validation" if self.is_validation else str(self.competition)
        return f"{self.revision} in {where}"

    def get_absolute_url(self) -> str:
        return reverse("evaluation", args=[self.pk])
