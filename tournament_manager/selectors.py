"""Reads about tournaments that are more than a one-line query."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from django.conf import settings
from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F, Q, QuerySet

from core.models import (
    CompetitorKind,
    Duel,
    DuelSeat,
    DuelStatus,
    Environment,
    Evaluation,
    JobKind,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)

#: Duels that ended: the ones that say whether an entry can play.
_ENDED = (DuelStatus.SUCCEEDED, DuelStatus.FAILED)


def paused_revisions(revision_ids: Iterable[int]) -> dict[int, str]:
    """The revisions among ``revision_ids`` that ladders do not pair now, with why: their
    last ``ARENA_LADDER_PAUSE_AFTER_FAILURES`` ladder duels since they were validated all failed
    (played by no one: the agent could not start, its server did not answer), not lost,
    against two opponents or more: the failing one is the entry they share, and an
    opponent that met it each time is not blamed. A revision validated again
    (re-validated, or its competitor's next one) starts afresh. One query, and two more
    for each revision that failed that often."""
    needed = settings.ARENA_LADDER_PAUSE_AFTER_FAILURES
    if needed <= 0:
        return {}
    failing = (
        DuelSeat.objects.filter(
            revision_id__in=list(revision_ids),
            duel__status=DuelStatus.FAILED,
            duel__tournament__format=TournamentFormat.LADDER,
        )
        .values("revision_id")
        .annotate(failures=Count("duel", distinct=True))
        .filter(failures__gte=needed)
        .values_list("revision_id", flat=True)
    )
    paused = {}
    for revision in Revision.objects.filter(pk__in=list(failing)):
        validation = revision.job(JobKind.VALIDATION)
        since = validation.ended_at if validation is not None else None
        # Ladder duels only: a test duel (a user's choice of opponent) or another format's
        # duel says nothing of how the ladder pairs it, and must not let anyone pause it.
        ended = Duel.objects.of_revision(revision).filter(
            tournament__format=TournamentFormat.LADDER, status__in=_ENDED
        )
        if since is not None:
            ended = ended.filter(created_at__gte=since)
        last = list(
            ended.with_seats().select_related("job").order_by("-created_at", "-pk")[:needed]
        )
        opponents = {
            seat.revision.competitor_id
            for duel in last
            for seat in duel.players()
            if seat.revision_id != revision.pk
        }
        if (
            len(last) == needed
            and all(duel.status == DuelStatus.FAILED for duel in last)
            and len(opponents) >= 2
        ):
            why = last[0].reported_error.strip().splitlines()
            paused[revision.pk] = (
                f"its last {needed} duels failed, played by no one"
                + (f" (the last: {why[0]})" if why else "")
                + "; it is paired again once it validates again"
            )
    return paused


def others_waiting() -> bool:
    """Whether a duel of a tournament other than a standing ladder, or an evaluation of a
    score competition other than a standing one, waits for a worker: organizers'
    competitions take precedence over the standing ones."""
    return (
        Duel.objects.filter(
            status=DuelStatus.QUEUED, tournament__isnull=False, tournament__is_standing=False
        ).exists()
        or Evaluation.objects.filter(
            status=DuelStatus.QUEUED, competition__isnull=False, competition__is_standing=False
        ).exists()
    )


def _validated_in(environment: Environment) -> QuerySet[Revision]:
    return Revision.objects.validated().filter(competitor__environment=environment)


def latest_validated_revisions(environment: Environment) -> list[Revision]:
    """Each competitor's newest validated revision in ``environment``: who may enter."""
    latest: dict[int, Revision] = {}
    revisions = (
        _validated_in(environment)
        .select_related("competitor__owner")
        .order_by("competitor__name", "-version")
    )
    for revision in revisions:
        latest.setdefault(revision.competitor_id, revision)
    return list(latest.values())


def latest_validated_revision_ids(environment: Environment) -> dict[int, int]:
    """``latest_validated_revisions`` as ids (revision: its competitor), without loading
    a row each: what a refit of ten thousand competitors needs of them."""
    latest: dict[int, int] = {}
    rows = (
        _validated_in(environment)
        .order_by("competitor_id", "-version")
        .values_list("competitor_id", "pk")
    )
    for competitor, revision in rows:
        latest.setdefault(competitor, revision)
    return {revision: competitor for competitor, revision in latest.items()}


@dataclasses.dataclass(frozen=True)
class TournamentProgress:
    """Where a tournament's duels are, and an estimate of the time its remaining ones take."""

    total: int
    done: int
    failed: int
    running: int
    queued: int
    #: Mean duration of its succeeded duels (their last attempt), None before the first.
    average_duel_seconds: float | None
    #: None when unknown: nothing finished yet, nothing left, or a ladder (no end).
    seconds_left: float | None

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.done - self.failed)

    @property
    def minutes_left(self) -> int | None:
        if self.seconds_left is None:
            return None
        return max(1, round(self.seconds_left / 60))

    def __str__(self) -> str:
        parts = [f"{self.done} done", f"{self.running} running", f"{self.queued} queued"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        text = ", ".join(parts)
        if self.minutes_left is not None:
            text += f"; about {self.minutes_left} min left"
        return text


def tournament_progress(tournament: Tournament) -> TournamentProgress:
    """Counts by status, and time left = mean duel duration x duels left / duels running
    at once (at least one): the workers' pace as seen now."""
    counts = dict(tournament.duels.order_by().values_list("status").annotate(count=Count("pk")))
    done = counts.get(DuelStatus.SUCCEEDED, 0)
    failed = counts.get(DuelStatus.FAILED, 0)
    running = counts.get(DuelStatus.RUNNING, 0)
    queued = counts.get(DuelStatus.QUEUED, 0)
    scheduled = done + failed + running + queued
    # A tournament's duels are each played by their job, which holds their times.
    average = tournament.duels.filter(
        status=DuelStatus.SUCCEEDED, job__started_at__isnull=False, job__ended_at__isnull=False
    ).aggregate(
        average=Avg(
            ExpressionWrapper(
                F("job__ended_at") - F("job__started_at"), output_field=DurationField()
            )
        )
    )["average"]
    average_seconds = average.total_seconds() if average is not None else None
    total = max(tournament.duels_total, scheduled)
    left = max(0, total - done - failed)
    seconds_left = None
    if (
        average_seconds is not None
        and left
        and not tournament.is_ladder
        and tournament.status == TournamentStatus.RUNNING
    ):
        seconds_left = average_seconds * left / max(1, running)
    return TournamentProgress(
        total=total,
        done=done,
        failed=failed,
        running=running,
        queued=queued,
        average_duel_seconds=average_seconds,
        seconds_left=seconds_left,
    )


@dataclasses.dataclass(frozen=True)
class LadderProgress:
    """How a revision is doing in a running ladder it is entered in, for its page."""

    ladder: Tournament
    #: Its rated matches in the ladder's played duels: each distinct one (a match identical
    #: to an earlier one of its duel is not rated again, ``tournament_manager.ratings``).
    rated_matches: int
    #: When it plays next, in words: "playing now", "in about 2 minutes"...
    next_duel: str


#: Finished duels whose pace estimates when an entry plays next.
PACE_DUELS = 20


def ladder_progress(revision_id: int, ladder_id: int) -> LadderProgress:
    """How ``revision_id`` is doing in the ladder ``ladder_id`` it is entered in: its rated
    matches there, and when it should play next, from the ladder's own pace (its last
    ``PACE_DUELS`` duels' ends), the entries waiting, and, for a standing ladder, whether
    it rests and whether other tournaments' duels come first. At most six queries."""
    ladder = (
        Tournament.objects.select_related("environment")
        .annotate(entries=Count("participants", filter=Q(participants__withdrawn=False)))
        .get(pk=ladder_id)
    )
    by_status = dict(
        Duel.objects.filter(tournament=ladder, seats__revision_id=revision_id)
        .values("status")
        .annotate(
            rated=Count("matches", filter=Q(matches__ratingchange__isnull=False), distinct=True)
        )
        .values_list("status", "rated")
    )
    return LadderProgress(
        ladder=ladder,
        rated_matches=by_status.get(DuelStatus.SUCCEEDED) or 0,
        next_duel=_next_duel(ladder, revision_id, by_status),
    )


def _next_duel(ladder: Tournament, revision_id: int, its_duels: dict[str, int]) -> str:
    if DuelStatus.RUNNING in its_duels:
        return "playing now"
    if DuelStatus.QUEUED in its_duels:
        return "queued, waiting for a worker"
    entries: int = ladder.entries  # type: ignore[attr-defined]
    if entries < ladder.environment.players:
        return "once another agent joins: a duel needs an opponent"
    if ladder.is_standing and _resting(ladder, revision_id):
        return (
            f"when a new agent or version joins: it has played its "
            f"{settings.ARENA_STANDING_LADDER_DUELS} duels, and the ladder rests until then"
        )
    if ladder.is_standing and others_waiting():
        return "once the organizers' competitions waiting for a worker have been played"
    ends = [
        ended
        for ended in Duel.objects.filter(tournament=ladder, ended_at__isnull=False)
        .order_by("-ended_at")
        .values_list("ended_at", flat=True)[:PACE_DUELS]
        if ended is not None
    ]
    if len(ends) < 2:
        return "soon: the ladder is pairing its first duels"
    # Duels a second, over the last ones; each seats `players` of the entries.
    per_second = (len(ends) - 1) / max((ends[0] - ends[-1]).total_seconds(), 1.0)
    seconds = entries / (ladder.environment.players * per_second)
    return f"in about {_duration_in_words(seconds)}"


def asks_for_duels(duels_played: int, *, online: bool) -> bool:
    """In a standing ladder, whether an entry still asks for duels: fewer than
    ``ARENA_STANDING_LADDER_DUELS`` played by its revision, or an online agent (its owner
    queued it to play). A settled entry plays only as an unsettled one's opponent, so a
    standing ladder whose entries are all settled rests: an idle site costs no CPU, and
    an LLM player does not spend its owner's tokens forever. ``_asking_for_duels`` is the
    same rule as a filter of a ladder's entries."""
    return online or duels_played < settings.ARENA_STANDING_LADDER_DUELS


def _asking_for_duels() -> Q:
    return Q(duels_played__lt=settings.ARENA_STANDING_LADDER_DUELS) | Q(
        revision__competitor__kind=CompetitorKind.ONLINE
    )


def _resting(ladder: Tournament, revision_id: int) -> bool:
    """Whether a standing ladder rests for this entry: neither it nor any other entry asks
    for duels (``asks_for_duels``). One query."""
    counts = ladder.participants.filter(withdrawn=False).aggregate(
        own=Count("pk", filter=Q(revision_id=revision_id)),
        asking=Count("pk", filter=_asking_for_duels()),
    )
    return counts["own"] > 0 and counts["asking"] == 0


def _duration_in_words(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes <= 1:
        return "a minute"
    if minutes < 90:
        return f"{minutes} minutes"
    return f"{round(minutes / 60)} hours"
