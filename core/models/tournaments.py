from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from core.models.jobs import JobStatus
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
    #: The environment's standing ladder (``Environment.standing_competition``), opened by
    #: the tournament manager: it schedules duels only while no other tournament's duel
    #: waits for a worker.
    is_standing = models.BooleanField(default=False, editable=False)
    #: A competition's own ladder (a phase that plays one): only the agents of its teams
    #: join it; online play and the game's standing ladder do not count it as the game's.
    entrants = models.ForeignKey(
        "core.Competition",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="ladders",
        editable=False,
    )
    concurrent_duels = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=(
            "Ladders only: its pace, the duels between hosted agents queued or running at "
            "once. Empty: ARENA_LADDER_CONCURRENT_DUELS."
        ),
    )
    open_entry = models.BooleanField(
        default=True,
        editable=False,
        help_text="Ladders only: the newest validated revision of every competitor joins it "
        "while it runs. Off: it plays the revisions it was created with (a competition's "
        "final).",
    )
    duels_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Ladders only: it ends by itself once this many duels are played "
        "(a ladder of a fixed length, as a competition's final); empty: until stopped.",
    )
    # Progress, kept exact by the services that move duels between statuses.
    duels_total = models.PositiveIntegerField(default=0)
    duels_done = models.PositiveIntegerField(default=0)
    duels_failed = models.PositiveIntegerField(default=0)
    #: A ladder's standings (a fit of all its matches) are computed by the tournament
    #: manager at most every ``ARENA_LADDER_STANDINGS_SECONDS``: when, and with how many
    #: duels done.
    ranked_at = models.DateTimeField(null=True, blank=True, editable=False)
    ranked_duels = models.PositiveIntegerField(default=0, editable=False)
    #: How long computing them took last time (the next waits ten times as long at least).
    ranking_seconds = models.FloatField(default=0, editable=False)

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
        """Duels played, of all it plays (a failed duel is not played: it is counted apart,
        ``duels_failed``); 0 for a ladder, which has no number of duels to reach."""
        if not self.duels_total or self.is_ladder:
            return 0
        return round(100 * self.duels_done / self.duels_total)


class Participant(models.Model):
    tournament = models.ForeignKey(
        Tournament, on_delete=models.CASCADE, related_name="participants"
    )
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="entries")
    points = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    #: Sum of match points over every duel: the float nearest to the exact sum, which
    #: ``referee.match_points.exact_score`` gives back (127/3 from 42.333333333333336).
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
    #: A ladder's matchmaking reads these instead of the history: duels it played to the
    #: end, and when its last duel ended (played or failed). Kept by the duel's end, in
    #: the transaction that rates it.
    duels_played = models.PositiveIntegerField(default=0)
    last_duel_at = models.DateTimeField(null=True, blank=True)

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


#: A duel's (and an evaluation's) status: a copy of its job's, written by ``core.jobs``.
DuelStatus = JobStatus


class DuelResult(models.TextChoices):
    PLAYER_1_WIN = "PLAYER_1_WIN", "Player 1 won"
    PLAYER_2_WIN = "PLAYER_2_WIN", "Player 2 won"
    DRAW = "DRAW", "Draw"
    #: More than two players, not all equal: their scores rank them.
    RANKED = "RANKED", "Ranked by score"
    ERROR = "ERROR", "Error"


#: The most players a duel seats.
MAX_PLAYERS = 6


def player_number(field: str) -> Q:
    """The check that ``field`` holds a duel player's number: 1 to ``MAX_PLAYERS``."""
    return Q(**{f"{field}__gte": 1}) & Q(**{f"{field}__lte": MAX_PLAYERS})


def one_per_player_of_match(name: str) -> list[models.BaseConstraint]:
    """The constraints of a table that keeps a row per player of a match (its logs, its
    conversations), named ``<name>_...``."""
    return [
        models.UniqueConstraint(fields=["match", "player"], name=f"{name}_unique"),
        models.CheckConstraint(condition=player_number("player"), name=f"{name}_player_valid"),
    ]


class DuelQuerySet(models.QuerySet["Duel"]):
    def _with_seat(self, **lookups: object) -> DuelQuerySet:
        return self.filter(
            models.Exists(DuelSeat.objects.filter(duel=models.OuterRef("pk"), **lookups))
        )

    def of_revision(self, revision: Revision | int) -> DuelQuerySet:
        """Duels in which ``revision`` plays any seat (self-play plays them all)."""
        return self._with_seat(revision=revision)

    def with_competitor(self, competitor: Competitor) -> DuelQuerySet:
        """Duels in which ``competitor`` plays any seat."""
        return self._with_seat(revision__competitor=competitor)

    def with_online_seat(self) -> DuelQuerySet:
        """Duels in which an online agent or a human plays (refereed where the seat bus
        reaches)."""
        return self._with_seat(revision__competitor__kind__in=("online", "human"))

    def with_llm_seat(self) -> DuelQuerySet:
        """Duels in which an LLM player plays (mostly waiting on its server)."""
        return self._with_seat(revision__competitor__kind="llm")

    def with_seats(self) -> DuelQuerySet:
        """Its seats, their revisions and competitors (and its game) read with the list,
        not one query per duel."""
        return self.select_related("environment").prefetch_related(
            models.Prefetch(
                "seats",
                DuelSeat.objects.select_related(
                    "revision__competitor__owner", "revision__competitor__environment"
                ),
            )
        )


class DuelManager(models.Manager["Duel"]):
    def seated(self, revisions: Sequence[Revision | int], **fields: Any) -> Duel:
        """A new duel with ``revisions`` in seats 1, 2, ... (one revision in every seat
        for self-play); its game is theirs unless ``environment`` says."""
        return self.bulk_seated([Duel(**fields)], [revisions])[0]

    def bulk_seated(
        self, duels: Sequence[Duel], groups: Sequence[Sequence[Revision | int]]
    ) -> list[Duel]:
        """Save new ``duels`` with each group of revisions in its seats, in two INSERTs
        (a duel given revisions by id names its ``environment``)."""
        for duel, group in zip(duels, groups, strict=True):
            duel.num_players = len(group)
            if duel.environment_id is None:
                if not isinstance(group[0], Revision):
                    raise ValueError("a duel of revisions given by id needs its environment")
                duel.environment_id = group[0].competitor.environment_id
        saved = self.bulk_create(duels)
        DuelSeat.objects.bulk_create(
            DuelSeat(duel=duel, number=number, **_revision_field(revision))
            for duel, group in zip(saved, groups, strict=True)
            for number, revision in enumerate(group, start=1)
        )
        return saved


def _revision_field(revision: Revision | int) -> dict[str, object]:
    if isinstance(revision, Revision):
        return {"revision": revision}
    return {"revision_id": revision}


class Played(NamedTuple):
    """When a duel or an evaluation was played."""

    started_at: datetime | None
    ended_at: datetime | None

    @property
    def seconds(self) -> float | None:
        """From its start to its end; None until it ended."""
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


class Refereed:
    """What a duel and an evaluation share: the referee plays it under a job of its own
    (``core.jobs``), or, a validation's, under its revision's validation job; it is over
    once it succeeded, failed or was cancelled."""

    status: str
    error: str
    started_at: datetime | None
    ended_at: datetime | None

    @property
    def is_finished(self) -> bool:
        return self.status in {DuelStatus.SUCCEEDED, DuelStatus.FAILED, DuelStatus.CANCELLED}

    @property
    def played(self) -> Played:
        """When it was played: its job's times, which a retry clears with the job; a
        validation's own, kept by the row since it has no job (its revision's validation
        job is run afresh by a re-validation, while the row it stored stays)."""
        job = getattr(self, "job", None)
        times = self if job is None else job
        return Played(times.started_at, times.ended_at)

    @property
    def reported_error(self) -> str:
        """What went wrong, as its pages and the API show it once it is over: the
        referee's word (the agents' faults, or why it could not be played), else why its
        job failed or was cancelled (the watchdog gave up, its tournament was cancelled).
        Nothing while it is queued or running again: a retried one's last outcome is no
        longer its own."""
        if not self.is_finished:
            return ""
        job = getattr(self, "job", None)
        return self.error or (job.error if job is not None else "")


class Duel(Refereed, models.Model):
    """Two to six revisions playing N matches; a validation duel has no tournament.

    Each player is a seat row (``DuelSeat``, ``duel.seats``), seat 1 first.
    """

    tournament = models.ForeignKey(
        Tournament, null=True, blank=True, on_delete=models.CASCADE, related_name="duels"
    )
    #: The game played (every seat's competitor's).
    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="duels")
    #: Players in the duel (the environment's seats): 2 to MAX_PLAYERS.
    num_players = models.PositiveSmallIntegerField(default=2)
    round = models.PositiveIntegerField(null=True, blank=True)
    is_validation = models.BooleanField(default=False)
    #: A test duel's: who asked for it (``core.services.requested_duels``), against an agent of
    #: their choice, unrated; counted for the hourly limit.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="test_duels",
    )
    num_matches = models.PositiveIntegerField()
    seed = models.BigIntegerField()

    #: A copy of its job's status (``core.jobs``), which pages and standings filter on; a
    #: validation duel, stored by its revision's validation, has no job of its own.
    status = models.CharField(max_length=16, choices=DuelStatus.choices, default=DuelStatus.QUEUED)
    #: The worker (``host:pid``) that recorded its outcome: which machine played it.
    played_by = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    #: A validation duel's times: when its revision's validation played it. A duel of
    #: its own has its job's (``played``), and these stay empty.
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    result = models.CharField(max_length=16, choices=DuelResult.choices, blank=True)
    #: The referee's word on the duel it played: the agents' faults, or why it could not
    #: be played. Why its job failed or was cancelled unplayed is the job's
    #: (``reported_error``).
    error = models.TextField(blank=True)
    draws = models.PositiveIntegerField(default=0)
    #: Matches lost to faults of no player.
    other_errors = models.PositiveIntegerField(default=0)

    objects = DuelManager.from_queryset(DuelQuerySet)()

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
                condition=Q(num_players__gte=2) & Q(num_players__lte=MAX_PLAYERS),
                name="duel_num_players_valid",
            ),
        ]

    def __str__(self) -> str:
        if self.pk is None:
            return "new duel"
        revisions = self.revisions()
        if self.is_validation and revisions:
            return f"self-play of {revisions[0]}"
        return " vs ".join(str(revision) for revision in revisions) or f"duel {self.pk}"

    def players(self) -> list[DuelSeat]:
        """Every seat, seat 1 first (``.all()``: a list of duels prefetches them,
        ``DuelQuerySet.with_seats``)."""
        return list(self.seats.all())

    def revisions(self) -> list[Revision]:
        """Each seat's revision, seat 1's first."""
        return [seat.revision for seat in self.players()]

    def get_absolute_url(self) -> str:
        return reverse("duel", args=[self.pk])


class DuelSeatQuerySet(models.QuerySet["DuelSeat"]):
    def groups(self, *fields: str) -> dict[int, list[tuple[Any, ...]]]:
        """Each duel's seats as ``fields`` tuples, seat 1's first, by duel id: one query
        for a whole list of duels (``DuelSeat.objects.filter(duel__in=...)``)."""
        groups: dict[int, list[tuple[Any, ...]]] = {}
        for duel, *values in self.order_by("duel_id", "number").values_list("duel_id", *fields):
            groups.setdefault(duel, []).append(tuple(values))
        return groups


class DuelSeat(models.Model):
    """One player of a duel: the revision in seat ``number`` (1 to the duel's
    ``num_players``) and what it did there."""

    # No index of their own: the unique (duel, number) and the (revision, duel) index lead
    # with them.
    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="seats", db_index=False)
    number = models.PositiveSmallIntegerField()
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="duel_seats", db_index=False
    )
    #: Matches it won outright.
    wins = models.PositiveIntegerField(default=0)
    #: Its total over the matches.
    score = models.FloatField(default=0)
    #: 1 for the best total score, equal scores sharing a rank; None until it is scored.
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    #: Matches lost by a fault of its agent.
    errors = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)
    #: The end of what its agent wrote on stderr.
    log = models.TextField(blank=True)

    objects = DuelSeatQuerySet.as_manager()

    class Meta:
        # By id: "duel" would order by the duel's own ordering, through a join.
        ordering = ["duel_id", "number"]
        indexes = [models.Index(fields=["revision", "duel"])]
        constraints = [
            models.UniqueConstraint(fields=["duel", "number"], name="duel_seat_unique"),
            models.CheckConstraint(
                condition=player_number("number"), name="duel_seat_number_valid"
            ),
            models.CheckConstraint(condition=Q(score__gte=0), name="duel_seat_score_positive"),
        ]

    def __str__(self) -> str:
        return f"seat {self.number} of duel {self.duel_id}: {self.revision}"


class Match(models.Model):
    """One match of a duel: its seed and actions replay every state."""

    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="matches")
    index = models.PositiveIntegerField()
    #: The duel player (1 to 6) in the environment's first seat.
    first_player = models.PositiveSmallIntegerField()
    #: The duel player in each environment seat.
    seats = models.JSONField(default=list)
    #: Every player's score, player 1's first.
    scores = models.JSONField(default=list)
    seed = models.BigIntegerField()
    actions = models.JSONField(default=list)
    timings = models.JSONField(default=list)
    result = models.CharField(max_length=16, choices=DuelResult.choices)
    error_msg = models.TextField(blank=True)
    #: [{"player": 1 to 6, "kind": "timeout", "message": "...", "step": n}, ...]
    faults = models.JSONField(default=list)
    #: The player at fault, when exactly one was.
    fault_player = models.PositiveSmallIntegerField(null=True, blank=True)
    fault_kind = models.CharField(max_length=32, blank=True)
    steps = models.PositiveIntegerField(default=0)
    #: Its first steps that the referee played, the match's opening (``referee.openings``):
    #: pages show them as the opening's, not a player's.
    opening = models.PositiveSmallIntegerField(default=0)
    duration = models.FloatField(default=0)

    class Meta:
        ordering = ["duel", "index"]
        verbose_name_plural = "matches"
        constraints = [
            models.UniqueConstraint(fields=["duel", "index"], name="match_index_unique"),
            models.CheckConstraint(
                condition=player_number("first_player"), name="match_first_player_valid"
            ),
            models.CheckConstraint(
                condition=Q(fault_player__isnull=True) | player_number("fault_player"),
                name="match_fault_player_valid",
            ),
            models.CheckConstraint(
                condition=Q(result__in=DuelResult.values), name="match_result_valid"
            ),
        ]

    def __str__(self) -> str:
        # Not the duel's players: lists of matches would read each duel's seats.
        return f"match {self.index} of duel {self.duel_id}"

    def get_absolute_url(self) -> str:
        return reverse("match", args=[self.duel_id, self.index])


class MatchLog(models.Model):
    """What one player's agent wrote on stderr during each of its moves in one match
    (``referee.results.MatchRecord.move_logs``): shown at those moves in the replay to
    whoever may read them (``reads.access.can_see_logs``)."""

    match = models.ForeignKey(Match, on_delete=models.CASCADE, related_name="logs")
    #: The duel player (1 to the duel's number of players).
    player = models.PositiveSmallIntegerField()
    #: [{"step": n (from 0, the protocol's), "log": "..."}, ...] in step order; each capped
    #: by the sandbox (``SandboxLimits.move_log_bytes``, ``log_bytes`` over the duel).
    moves = models.JSONField(default=list)

    class Meta:
        ordering = ["match", "player"]
        constraints = one_per_player_of_match("match_log")

    def __str__(self) -> str:
        return f"player {self.player}'s log in {self.match}"


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
