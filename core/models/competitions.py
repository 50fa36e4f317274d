from __future__ import annotations

import dataclasses

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from core.models.submissions import Competitor, Environment, Revision


class TournamentFormat(models.TextChoices):
    ROUND_ROBIN = "round_robin", "Round robin"
    SWISS = "swiss", "Swiss"
    LADDER = "ladder", "Continuous ladder"


class TournamentStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Tournament(models.Model):
    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="tournaments"
    )
    name = models.CharField(max_length=120)
    format = models.CharField(
        max_length=16, choices=TournamentFormat.choices, default=TournamentFormat.ROUND_ROBIN
    )
    status = models.CharField(
        max_length=16, choices=TournamentStatus.choices, default=TournamentStatus.DRAFT
    )
    matches_per_duel = models.PositiveIntegerField(
        help_text="Matches in each duel; the environment's default when created from the admin."
    )
    rounds = models.PositiveIntegerField(null=True, blank=True, help_text="Swiss only.")
    #: Swiss: the round being played (0 before the launch); the tournament manager moves
    #: it on with a conditional update, so each round is scheduled once.
    current_round = models.PositiveIntegerField(default=0)
    is_public = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    starts_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Progress, kept exact by the services that move duels between statuses.
    duels_total = models.PositiveIntegerField(default=0)
    duels_done = models.PositiveIntegerField(default=0)
    duels_failed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=TournamentStatus.values), name="tournament_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(format__in=TournamentFormat.values), name="tournament_format_valid"
            ),
            models.CheckConstraint(
                condition=Q(duels_done__lte=F("duels_total"))
                & Q(duels_failed__lte=F("duels_total")),
                name="tournament_progress_within_total",
            ),
            models.CheckConstraint(
                condition=Q(matches_per_duel__gte=1), name="tournament_matches_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("tournament", args=[self.pk])

    @property
    def is_ladder(self) -> bool:
        return self.format == TournamentFormat.LADDER

    @property
    def is_finished(self) -> bool:
        return self.status in {
            TournamentStatus.COMPLETED,
            TournamentStatus.FAILED,
            TournamentStatus.CANCELLED,
        }

    @property
    def progress_percent(self) -> int:
        if not self.duels_total:
            return 0
        return round(100 * (self.duels_done + self.duels_failed) / self.duels_total)


class Participant(models.Model):
    tournament = models.ForeignKey(
        Tournament, on_delete=models.CASCADE, related_name="participants"
    )
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="entries")
    points = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    #: Sum of match points over every duel.
    score = models.FloatField(default=0)
    rank = models.PositiveIntegerField(null=True, blank=True)
    withdrawn = models.BooleanField(default=False)
    #: Position in the seeding (Swiss: by rating at the launch, best first).
    seed = models.PositiveIntegerField(null=True, blank=True)
    #: Swiss rounds sat out for an odd count of players, each worth a won duel's 2 points.
    byes = models.PositiveIntegerField(default=0)
    #: Swiss tie-break: the sum of the opponents' points, its own for a bye (0 otherwise).
    buchholz = models.PositiveIntegerField(default=0)
    #: When it entered (a ladder's newcomers wait from then for their first duel).
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tournament", "rank", "-points"]
        constraints = [
            models.UniqueConstraint(
                fields=["tournament", "revision"], name="participant_unique_per_tournament"
            ),
            models.CheckConstraint(condition=Q(score__gte=0), name="participant_score_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.revision} in {self.tournament}"


class DuelStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class DuelResult(models.TextChoices):
    PLAYER_1_WIN = "PLAYER_1_WIN", "Player 1 won"
    PLAYER_2_WIN = "PLAYER_2_WIN", "Player 2 won"
    DRAW = "DRAW", "Draw"
    #: More than two players, not all equal: their scores rank them.
    RANKED = "RANKED", "Ranked by score"
    ERROR = "ERROR", "Error"


#: The most players a duel seats.
MAX_PLAYERS = 6


class DuelQuerySet(models.QuerySet["Duel"]):
    def with_online_seat(self) -> DuelQuerySet:
        """Duels in which an online agent or a human plays (refereed where the seat bus
        reaches)."""
        seated = ("online", "human")
        return self.filter(
            Q(revision_1__competitor__kind__in=seated)
            | Q(revision_2__competitor__kind__in=seated)
            | Q(more_players__revision__competitor__kind__in=seated)
        ).distinct()

    def with_competitor(self, competitor: Competitor) -> DuelQuerySet:
        """Duels in which ``competitor`` plays any seat."""
        return self.filter(
            Q(revision_1__competitor=competitor)
            | Q(revision_2__competitor=competitor)
            | Q(more_players__revision__competitor=competitor)
        ).distinct()

    def with_llm_seat(self) -> DuelQuerySet:
        """Duels in which an LLM player plays (mostly waiting on its server)."""
        return self.filter(
            Q(revision_1__competitor__kind="llm")
            | Q(revision_2__competitor__kind="llm")
            | Q(more_players__revision__competitor__kind="llm")
        ).distinct()


#: What a duel keeps of each player besides its revision: ``player_1_wins`` ... on the duel
#: row for players 1 and 2, ``wins`` ... on a ``DuelPlayer`` row for the others.
_PLAYER_FIELDS = ("wins", "score", "errors", "restarts", "log")


@dataclasses.dataclass(frozen=True)
class DuelPlayerView:
    """One player of a duel, whichever row keeps it (``Duel.players``)."""

    number: int
    revision: Revision
    wins: int
    score: float
    errors: int
    restarts: int
    log: str
    rank: int | None


class Duel(models.Model):
    """Two to six revisions playing N matches; a validation duel has no tournament.

    Players 1 and 2 are kept on the duel row (``revision_1``, ``player_1_score``, ...);
    the players of a game of more than two, from 3 on, have a ``DuelPlayer`` row each.
    """

    tournament = models.ForeignKey(
        Tournament, null=True, blank=True, on_delete=models.CASCADE, related_name="duels"
    )
    revision_1 = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="+")
    revision_2 = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="+")
    #: Players in the duel (the environment's seats): 2 to MAX_PLAYERS.
    num_players = models.PositiveSmallIntegerField(default=2)
    round = models.PositiveIntegerField(null=True, blank=True)
    is_validation = models.BooleanField(default=False)
    num_matches = models.PositiveIntegerField()
    seed = models.BigIntegerField()

    #: A copy of its job's status (``core.jobs``), which pages and standings filter on; a
    #: validation duel, stored by its revision's validation, has no job of its own.
    status = models.CharField(max_length=16, choices=DuelStatus.choices, default=DuelStatus.QUEUED)
    #: The worker (``host:pid``) that recorded its outcome: which machine played it.
    played_by = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    result = models.CharField(max_length=16, choices=DuelResult.choices, blank=True)
    error = models.TextField(blank=True)
    player_1_wins = models.PositiveIntegerField(default=0)
    player_2_wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    player_1_score = models.FloatField(default=0)
    player_2_score = models.FloatField(default=0)
    player_1_errors = models.PositiveIntegerField(default=0)
    player_2_errors = models.PositiveIntegerField(default=0)
    other_errors = models.PositiveIntegerField(default=0)
    player_1_restarts = models.PositiveIntegerField(default=0)
    player_2_restarts = models.PositiveIntegerField(default=0)
    player_1_log = models.TextField(blank=True)
    player_2_log = models.TextField(blank=True)

    objects = DuelQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=DuelStatus.values), name="duel_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(result="") | Q(result__in=DuelResult.values),
                name="duel_result_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status=DuelStatus.SUCCEEDED) | ~Q(result=""),
                name="duel_succeeded_has_result",
            ),
            models.CheckConstraint(
                condition=Q(player_1_score__gte=0) & Q(player_2_score__gte=0),
                name="duel_scores_positive",
            ),
            models.CheckConstraint(
                condition=Q(num_players__gte=2) & Q(num_players__lte=MAX_PLAYERS),
                name="duel_num_players_valid",
            ),
        ]

    def __str__(self) -> str:
        if self.num_players > 2:
            return f"{self.revision_1} vs {self.revision_2} and {self.num_players - 2} more"
        return f"{self.revision_1} vs {self.revision_2}"

    def players(self) -> list[DuelPlayerView]:
        """Every player of the duel, player 1 first."""
        views = [
            DuelPlayerView(
                number,
                getattr(self, f"revision_{number}"),
                *(getattr(self, f"player_{number}_{field}") for field in _PLAYER_FIELDS),
                rank=None,
            )
            for number in (1, 2)
        ]
        if self.num_players > 2:
            views += [
                DuelPlayerView(
                    row.number,
                    row.revision,
                    *(getattr(row, field) for field in _PLAYER_FIELDS),
                    rank=None,
                )
                # .all(): a page prefetches them for its list of duels.
                for row in self.more_players.all()
            ]
        if self.result in (DuelResult.ERROR, ""):
            return views
        return [
            dataclasses.replace(view, rank=1 + sum(other.score > view.score for other in views))
            for view in views
        ]

    def revisions(self) -> list[Revision]:
        """Each player's revision, player 1's first."""
        return [player.revision for player in self.players()]

    def get_absolute_url(self) -> str:
        return reverse("duel", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in {DuelStatus.SUCCEEDED, DuelStatus.FAILED, DuelStatus.CANCELLED}


class DuelPlayer(models.Model):
    """Player 3 to 6 of a duel of a game of more than two players: what the duel row keeps
    for players 1 and 2 (``revision_1``, ``player_1_wins``, ...)."""

    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="more_players")
    number = models.PositiveSmallIntegerField()
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="+")
    wins = models.PositiveIntegerField(default=0)
    score = models.FloatField(default=0)
    errors = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)
    log = models.TextField(blank=True)

    class Meta:
        ordering = ["duel", "number"]
        constraints = [
            models.UniqueConstraint(fields=["duel", "number"], name="duel_player_unique"),
            models.CheckConstraint(
                condition=Q(number__gte=3) & Q(number__lte=MAX_PLAYERS),
                name="duel_player_number_valid",
            ),
            models.CheckConstraint(condition=Q(score__gte=0), name="duel_player_score_positive"),
        ]

    def __str__(self) -> str:
        return f"player {self.number} of {self.duel}: {self.revision}"


class Match(models.Model):
    """One match of a duel: its seed and actions replay every state."""

    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="matches")
    index = models.PositiveIntegerField()
    #: The duel player (1 to 6) in the environment's first seat.
    first_player = models.PositiveSmallIntegerField()
    #: The duel player in each environment seat; empty on two-player rows recorded before
    #: games of more than two (their seats follow from ``first_player``).
    seat_players = models.JSONField(default=list, blank=True)
    #: Every player's score, player 1's first; empty on rows recorded before games of
    #: more than two (``player_1_score`` and ``player_2_score`` hold them).
    scores = models.JSONField(default=list, blank=True)
    seed = models.BigIntegerField()
    actions = models.JSONField(default=list)
    timings = models.JSONField(default=list)
    result = models.CharField(max_length=16, choices=DuelResult.choices)
    error_msg = models.TextField(blank=True)
    player_1_score = models.FloatField(default=0)
    player_2_score = models.FloatField(default=0)
    #: [{"player": 1 to 6, "kind": "timeout", "message": "...", "step": n}, ...]
    faults = models.JSONField(default=list)
    #: The player at fault, when exactly one was.
    fault_player = models.PositiveSmallIntegerField(null=True, blank=True)
    fault_kind = models.CharField(max_length=32, blank=True)
    steps = models.PositiveIntegerField(default=0)
    duration = models.FloatField(default=0)

    class Meta:
        ordering = ["duel", "index"]
        verbose_name_plural = "matches"
        constraints = [
            models.UniqueConstraint(fields=["duel", "index"], name="match_index_unique"),
            models.CheckConstraint(
                condition=Q(first_player__gte=1) & Q(first_player__lte=MAX_PLAYERS),
                name="match_first_player_valid",
            ),
            models.CheckConstraint(
                condition=Q(fault_player__isnull=True)
                | (Q(fault_player__gte=1) & Q(fault_player__lte=MAX_PLAYERS)),
                name="match_fault_player_valid",
            ),
            models.CheckConstraint(
                condition=Q(result__in=DuelResult.values), name="match_result_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.duel} match {self.index}"

    def get_absolute_url(self) -> str:
        return reverse("match", args=[self.duel_id, self.index])

    @property
    def seats(self) -> list[int]:
        """The duel player in each environment seat."""
        if self.seat_players:
            return list(self.seat_players)
        return [1, 2] if self.first_player == 1 else [2, 1]

    @property
    def player_scores(self) -> list[float]:
        """Every player's score, player 1's first."""
        return list(self.scores) or [self.player_1_score, self.player_2_score]


class LiveEvent(models.Model):
    """A batch of a running duel's public events, for its spectators (``referee.live``).

    Written by the duel's worker at most every ``ARENA_LIVE_FLUSH_SECONDS``, read by the
    gateway's live streams; the id orders them and is a stream's resume point. Deleted
    once the duel is recorded: the replay takes over.
    """

    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="live_events")
    #: The events, one JSON object a line (``match``, ``step``, ``match_end``).
    lines = models.TextField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"live events {self.pk} of duel {self.duel_id}"
