from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.models.competitions import Duel, Match
from core.models.submissions import Competitor

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
