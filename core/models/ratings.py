from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.models.submissions import Competitor, Environment, Revision
from core.models.tournaments import Duel, Match, Tournament

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


class RatedPairing(models.Model):
    """The rated matches of two revisions in one tournament, in the same seats and with
    the same first mover: what the leaderboard's fit and a ladder's standings read, a row
    per pairing rather than per match (a refit of a million matches reads a few hundred
    thousand rows, without joins).

    Counted in the transaction that rates the duel (``tournament_manager.ratings``), which
    runs once per duel. A rated duel is deleted only with its tournament (``delete_games``,
    the admin; duels and matches are read-only there), which takes these rows with it.
    ``epoch`` is the environment's ``ratings_epoch`` when the duel was rated: a reset of the
    ratings starts a new one, which alone the leaderboard reads. Duels of two players only;
    a match of more than two is read match by match.
    """

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="+")
    #: The revision in seat 1 and in seat 2.
    one = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    two = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    #: The seat (1 or 2) that moved first in these matches.
    first_player = models.PositiveSmallIntegerField()
    epoch = models.PositiveIntegerField()
    games = models.PositiveIntegerField(default=0)
    #: Matches seat 1 won, and drawn ones; seat 2 won the rest.
    one_wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tournament", "one", "two", "first_player", "epoch"],
                name="rated_pairing_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"revisions {self.one_id} and {self.two_id}: {self.games} rated matches"


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


class LeaderboardPoint(models.Model):
    """A competitor's published score after a refit in which its rated matches changed (it
    played, or its new revision did): its history, charted on its page. Written by
    ``tournament_manager.leaderboard.leaderboard_refit``; a refit that only moves the
    others' scores a little writes none for it."""

    competitor = models.ForeignKey(
        Competitor, on_delete=models.CASCADE, related_name="leaderboard_points"
    )
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField()
    score_sd = models.FloatField()
    matches = models.PositiveIntegerField()
    fitted_at = models.DateTimeField()

    class Meta:
        ordering = ["competitor", "fitted_at", "pk"]
        indexes = [models.Index(fields=["competitor", "fitted_at"])]

    def __str__(self) -> str:
        return f"{self.competitor}: {self.score:.0f} ± {self.score_sd:.0f} at {self.fitted_at}"
