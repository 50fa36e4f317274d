from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.models.competitions import Duel, Match
from core.models.submissions import Competitor, Environment, Revision

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3


class RatingQuerySet(models.QuerySet["Rating"]):
    def leaderboard(self) -> RatingQuerySet:
        """Best first, by the conservative estimate mu - 3 sigma."""
        return self.annotate(conservative_rating=models.F("mu") - 3 * models.F("sigma")).order_by(
            "-conservative_rating", "-games"
        )


class Rating(models.Model):
    """A competitor's openskill rating in its environment."""

    competitor = models.OneToOneField(Competitor, on_delete=models.CASCADE, related_name="rating")
    mu = models.FloatField(default=DEFAULT_MU)
    sigma = models.FloatField(default=DEFAULT_SIGMA)
    games = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RatingQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(sigma__gt=0), name="rating_sigma_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.competitor}: {self.mu:.2f} ± {self.sigma:.2f}"

    @property
    def conservative(self) -> float:
        return self.mu - 3 * self.sigma


class RatingChange(models.Model):
    """Every change of a rating, with what caused it (a match, or a reset)."""

    rating = models.ForeignKey(Rating, on_delete=models.CASCADE, related_name="changes")
    duel = models.ForeignKey(Duel, null=True, blank=True, on_delete=models.SET_NULL)
    match = models.ForeignKey(Match, null=True, blank=True, on_delete=models.SET_NULL)
    reason = models.CharField(max_length=32, default="match")
    mu_before = models.FloatField()
    sigma_before = models.FloatField()
    mu_after = models.FloatField()
    sigma_after = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rating", "created_at"]

    def __str__(self) -> str:
        return f"{self.rating.competitor}: {self.mu_before:.2f} → {self.mu_after:.2f}"


class LeaderboardQuerySet(models.QuerySet["LeaderboardEntry"]):
    def published(self) -> LeaderboardQuerySet:
        """Ranked entries first, best first; then the provisional ones, by score."""
        return self.order_by(
            models.F("rank").asc(nulls_last=True), models.F("score").desc(), "competitor__name"
        )


class LeaderboardEntry(models.Model):
    """A competitor's place on its environment's published leaderboard.

    Rewritten as a whole by ``tournament_manager.leaderboard.leaderboard_refit``: a
    Bradley-Terry fit of every rated match between the competitors' current revisions
    (see ``tournament_manager.bradley_terry``). ``rank`` is None while the revision has
    played fewer than ``ARENA_LEADERBOARD_PROVISIONAL_MATCHES`` rated matches: such an
    entry is provisional and listed after the ranked ones.
    """

    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="leaderboard_entries"
    )
    competitor = models.OneToOneField(
        Competitor, on_delete=models.CASCADE, related_name="leaderboard_entry"
    )
    #: The revision whose matches were fitted: the competitor's newest validated one.
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True)
    #: The best and worst rank it may hold, 95 % (among every fitted entry).
    rank_best = models.PositiveIntegerField()
    rank_worst = models.PositiveIntegerField()
    #: Elo scale (1500 the mean of the prior), and its standard deviation.
    score = models.FloatField()
    score_sd = models.FloatField()
    matches = models.PositiveIntegerField()
    wins = models.PositiveIntegerField()
    draws = models.PositiveIntegerField()
    losses = models.PositiveIntegerField()
    fitted_at = models.DateTimeField()

    objects = LeaderboardQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "leaderboard entries"
        ordering = ["environment", models.F("rank").asc(nulls_last=True), "-score"]

    def __str__(self) -> str:
        place = f"#{self.rank}" if self.rank is not None else "provisional"
        return f"{self.competitor}: {place}, {self.score:.0f} ± {self.score_sd:.0f}"

    @property
    def is_provisional(self) -> bool:
        return self.rank is None
