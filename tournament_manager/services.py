"""Tournaments: creating, scheduling, launching, following duels to the end, standings.

Three formats:

- round robin: every pair of participants plays one duel; in a game of more than two
  players (N seats), every group of N participants plays one duel (``round_robin_groups``);
- Swiss: a set number of rounds; round 1 pairs by seed, each next round (scheduled by the
  tournament manager once the previous one is over) pairs by score groups, avoiding
  rematches (``tournament_manager.pairing``); when the count is odd, one player sits out
  with a bye worth a won duel;
- continuous ladder: runs until stopped; the newest validated revision of every
  competitor plays, paired by ``tournament_manager.matchmaking``, a few duels at a time;
  its standings are the rating leaderboard (mu - 3 sigma); in a game of N players it
  matches groups of N.

Swiss pairs two players; a game of more than two is refused for it (a round robin or a
ladder plays it).

Points: 2 for a duel won (or a bye), 1 for a draw; standings by points, then (Swiss)
Buchholz, then duel wins, then total match score; ties share a rank; a withdrawn
participant keeps its results and ranks last. Progress counts are recomputed from the
duels, never incremented, so they stay exact whoever moved a duel. The duels themselves
are played by ``duel_runner.services``; the timed work (scheduled launches, expired leases, next
rounds, matchmaking) is done by the tournament manager daemon (``tournament_manager.daemon``).

Every change that several tournament managers (or a manager and an organizer) could
make at once is claimed with a conditional UPDATE and its row count: the first one wins,
the others find nothing to do.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, QuerySet, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from core.errors import ArenaError
from core.jobs.lifecycle import job_of, job_retry, jobs_cancel, jobs_queue
from core.models import (
    Competitor,
    CompetitorKind,
    Duel,
    DuelResult,
    DuelSeat,
    DuelStatus,
    Environment,
    Evaluation,
    Job,
    JobKind,
    JobStatus,
    Participant,
    Rating,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
    User,
)
from core.services.online import online_present
from referee.standings import (
    buchholz_scores,
    bye_points,
    record_duel,
    record_group,
    shared_ranks,
    standing_key,
)
from tournament_manager import pairing
from tournament_manager.bradley_terry import UNFITTED_SCORE, UNFITTED_SCORE_SD
from tournament_manager.leaderboard import fit_due, ladder_strengths
from tournament_manager.matchmaking import LadderAgent, Matchmaker, hosted_duel_limit
from tournament_manager.ratings import ratings_update_from_duel
from tournament_manager.selectors import latest_validated_revisions

logger = logging.getLogger(__name__)
#: Rows one bulk UPDATE writes: Django writes each field as a CASE over the rows, which
#: the database reads row by row, so one statement for a ladder of 10,000 entries took
#: minutes (10,000 x 10,000 comparisons a field); in batches it is linear.
BULK_UPDATE_ROWS = 500

SUPPORTED_FORMATS = (
    TournamentFormat.ROUND_ROBIN,
    TournamentFormat.SWISS,
    TournamentFormat.LADDER,
)
ACTIVE = (DuelStatus.QUEUED, DuelStatus.RUNNING)
#: The most duels a round robin of a game of more than two players schedules: every group
#: of N among P participants is C(P, N) duels, which grows fast.
MAX_ROUND_ROBIN_GROUPS = 500


# --- creating and launching ----------------------------------------------------------


def tournament_create(
    *,
    environment: Environment,
    name: str,
    revisions: Iterable[Revision],
    matches_per_duel: int | None = None,
    format: str = TournamentFormat.ROUND_ROBIN,
    rounds: int | None = None,
    created_by: User | None = None,
) -> Tournament:
    """A draft tournament with the given revisions (validated, one per competitor).

    A ladder may start with none: the newest validated revision of every competitor
    joins when it is launched, and every one validated later joins while it runs.
    """
    if environment.players < 2:
        raise ArenaError(
            f"{environment.title} is a one-player game: its agents are ranked by a score "
            "competition, not a tournament"
        )
    if format not in SUPPORTED_FORMATS:
        raise ArenaError(
            f"unknown tournament format {format!r}; choose one of "
            + ", ".join(str(choice) for choice in SUPPORTED_FORMATS)
        )
    if format == TournamentFormat.SWISS and not rounds:
        raise ArenaError("a Swiss tournament needs a number of rounds (1 or more)")
    if format == TournamentFormat.SWISS and environment.players > 2:
        raise ArenaError(
            f"Swiss pairs two players, and {environment} seats {environment.players}: "
            "play it as a round robin or a ladder"
        )
    revisions = list(revisions)
    competitors = [revision.competitor_id for revision in revisions]
    if len(set(competitors)) != len(competitors):
        raise ArenaError("a competitor may enter a tournament with one revision only")
    for revision in revisions:
        if revision.competitor.environment_id != environment.pk:
            raise ArenaError(
                f"{revision} plays {revision.competitor.environment}, not {environment}"
            )
        if not revision.is_valid:
            raise ArenaError(f"{revision} is not validated")
    with transaction.atomic():
        tournament = Tournament.objects.create(
            environment=environment,
            name=name,
            format=format,
            rounds=rounds if format == TournamentFormat.SWISS else None,
            matches_per_duel=matches_per_duel
            or (
                environment.ladder_matches_per_duel
                if format == TournamentFormat.LADDER
                else environment.matches_per_duel
            ),
            created_by=created_by,
        )
        Participant.objects.bulk_create(
            Participant(tournament=tournament, revision=revision) for revision in revisions
        )
    return tournament


def tournament_schedule(*, tournament: Tournament, starts_at: datetime | None) -> None:
    """Have the tournament manager launch the draft at ``starts_at`` (None: not by itself)."""
    updated = Tournament.objects.filter(pk=tournament.pk, status=TournamentStatus.DRAFT).update(
        starts_at=starts_at, error=""
    )
    if not updated:
        raise ArenaError(f"{tournament} is not a draft any more; only drafts are scheduled")
    tournament.starts_at = starts_at
    tournament.error = ""


def tournament_launch(*, tournament: Tournament) -> Tournament:
    """Draft to running, and its first duels: every pair (round robin), round 1 (Swiss),
    or none yet for a ladder, whose agents the tournament manager pairs as it goes.

    The draft is claimed with a conditional UPDATE: of two tournament managers (or a
    manager and an organizer) launching it at once, one does, the other gets an error.
    """
    with transaction.atomic():
        claimed = Tournament.objects.filter(pk=tournament.pk, status=TournamentStatus.DRAFT).update(
            status=TournamentStatus.RUNNING,
            started_at=timezone.now(),
            ended_at=None,
            error="",
            current_round=0,
            duels_total=0,
            duels_done=0,
            duels_failed=0,
        )
        launched = Tournament.objects.select_related("environment").get(pk=tournament.pk)
        if not claimed:
            raise ArenaError(f"{launched} is {launched.get_status_display().lower()}, not a draft")
        launched.participants.exclude(revision__in=Revision.objects.validated()).update(
            withdrawn=True
        )
        duels: list[Duel] = []
        if launched.is_ladder:
            ladder_refresh_entries(tournament=launched)
        else:
            participants = list(
                launched.participants.filter(withdrawn=False)
                .select_related("revision")
                .order_by("pk")
            )
            seats = launched.environment.players
            if len(participants) < 2:
                raise ArenaError("a tournament needs at least two participants")
            if len(participants) < seats:
                raise ArenaError(
                    f"a tournament of {launched.environment} needs at least {seats} participants"
                )
            if launched.format == TournamentFormat.SWISS:
                if seats > 2:
                    raise ArenaError(
                        f"Swiss pairs two players, and {launched.environment} seats {seats}"
                    )
                duels = _swiss_first_round(launched, participants)
            else:
                duels = _create_duels(
                    launched, round_robin_groups([p.revision_id for p in participants], seats)
                )
        tournament_settle(tournament=launched, rerank=True)
        _start(duels)
    launched.refresh_from_db()
    return launched


def round_robin_groups(revisions: Sequence[int], seats: int) -> list[tuple[int, ...]]:
    """Who plays whom in a round robin: every pair once (two seats) or, with more seats,
    every group of ``seats`` participants once, so any two participants meet equally often
    (in C(P-2, N-2) duels) and each plays every set of N-1 others once. Player 1 of each
    group is the member who has been player 1 least so far, the others following in turn
    after it, so everyone is player 1 about equally often; the seats of the game then
    rotate within each duel (``referee.results.seat_rotation``), which sits player 1 first
    once more than the others when the matches are not a multiple of the seats. Refused
    beyond ``MAX_ROUND_ROBIN_GROUPS`` duels."""
    if seats == 2:
        return list(itertools.combinations(revisions, 2))
    count = math.comb(len(revisions), seats)
    if count > MAX_ROUND_ROBIN_GROUPS:
        raise ArenaError(
            f"a round robin of {len(revisions)} participants in groups of {seats} is {count} "
            f"duels, more than {MAX_ROUND_ROBIN_GROUPS}: play a ladder instead"
        )
    as_seat_1: Counter[int] = Counter()
    groups = []
    for group in itertools.combinations(revisions, seats):
        first = min(range(seats), key=lambda position: as_seat_1[group[position]])
        as_seat_1[group[first]] += 1
        groups.append(group[first:] + group[:first])
    return groups


def tournament_cancel(*, tournament: Tournament) -> bool:
    """Stop a draft or a running tournament: queued duels are not played. Returns whether
    this call cancelled it (of two organizers clicking at once, one does)."""
    with transaction.atomic():
        cancelled = Tournament.objects.filter(
            pk=tournament.pk, status__in=[TournamentStatus.DRAFT, TournamentStatus.RUNNING]
        ).update(status=TournamentStatus.CANCELLED, ended_at=timezone.now())
        if cancelled:
            _cancel_queued_duels(Duel.objects.filter(tournament=tournament), "cancelled")
            tournament_settle(tournament=tournament)
    return bool(cancelled)


def tournament_stop(*, tournament: Tournament) -> None:
    """End a running ladder as completed: its queued duels are not played; the running
    ones finish and are rated."""
    if not tournament.is_ladder:
        raise ArenaError("only a ladder is stopped; cancel a round robin or Swiss tournament")
    with transaction.atomic():
        stopped = Tournament.objects.filter(
            pk=tournament.pk, status=TournamentStatus.RUNNING
        ).update(status=TournamentStatus.COMPLETED, ended_at=timezone.now())
        if not stopped:
            raise ArenaError(f"{tournament} is not running")
        _cancel_queued_duels(Duel.objects.filter(tournament=tournament), "the ladder stopped")
        tournament_settle(tournament=tournament, rerank=True)


def participant_withdraw(*, participant: Participant, reason: str = "withdrew") -> bool:
    """Take a participant out (its revision was disabled or, in a ladder, replaced).

    Its queued duels are cancelled; the ones it played stay in the standings, where it
    ranks last. Returns False if it had already withdrawn.
    """
    with transaction.atomic():
        # The tournament's row first, as in every writer of its participants' standings.
        tournament = Tournament.objects.select_for_update().get(pk=participant.tournament_id)
        withdrawn = Participant.objects.filter(pk=participant.pk, withdrawn=False).update(
            withdrawn=True
        )
        if not withdrawn:
            return False
        revision = participant.revision_id
        _cancel_queued_duels(
            Duel.objects.filter(tournament_id=participant.tournament_id).of_revision(revision),
            f"{participant.revision} {reason}",
        )
        tournament_settle(tournament=tournament, rerank=True)
    participant.withdrawn = True
    return True


# --- Swiss -------------------------------------------------------------------------------


def _swiss_first_round(tournament: Tournament, participants: list[Participant]) -> list[Duel]:
    """Seed by rating (mu - 3 sigma, then order of entry) and pair round 1 by seed."""
    ratings = _conservative_ratings([p.revision.competitor_id for p in participants])
    seeded = sorted(participants, key=lambda p: (-ratings.get(p.revision.competitor_id, 0.0), p.pk))
    for number, participant in enumerate(seeded, start=1):
        participant.seed = number
    Participant.objects.bulk_update(seeded, ["seed"], batch_size=BULK_UPDATE_ROWS)
    Tournament.objects.filter(pk=tournament.pk).update(current_round=1)
    tournament.current_round = 1
    return _play_round(tournament, pairing.first_round([p.revision_id for p in seeded]), number=1)


def swiss_round_next(*, tournament: Tournament) -> bool:
    """Schedule the next round of a running Swiss tournament once every duel of the
    current one is over and none failed (a failed duel fails the tournament until an
    organizer re-runs it). Returns whether it did.

    The round number moves on with a conditional UPDATE, so two tournament managers
    schedule each round once.
    """
    current = tournament.current_round
    if (
        tournament.format != TournamentFormat.SWISS
        or tournament.status != TournamentStatus.RUNNING
        or current >= (tournament.rounds or 0)
    ):
        return False
    if tournament.duels.filter(status__in=[*ACTIVE, DuelStatus.FAILED]).exists():
        return False
    if tournament.participants.filter(withdrawn=False).count() < 2:
        return False  # nobody left to pair: settling the tournament finishes it
    with transaction.atomic():
        claimed = Tournament.objects.filter(
            pk=tournament.pk, status=TournamentStatus.RUNNING, current_round=current
        ).update(current_round=current + 1)
        if not claimed:
            return False
        # Paired under the claim's row lock, which withdrawals take too: a player who
        # withdraws now is already out.
        # Score groups are ordered by seed, not by the tie-breaks of the standings.
        players = sorted(
            (p for p in _standings(tournament) if not p.withdrawn),
            key=lambda p: (-p.points, p.seed or 0, p.pk),
        )
        met = {
            frozenset(revision for (revision,) in group)
            for group in DuelSeat.objects.filter(duel__tournament=tournament)
            .exclude(duel__status=DuelStatus.CANCELLED)
            .groups("revision_id")
            .values()
        }
        next_round = pairing.next_round(
            [p.revision_id for p in players],
            points={p.revision_id: p.points for p in players},
            met=met,
            byes={p.revision_id: p.byes for p in players},
        )
        tournament.current_round = current + 1
        duels = _play_round(tournament, next_round, number=current + 1)
        tournament_settle(tournament=tournament, rerank=True)
        _start(duels)
    bye = (
        ""
        if next_round.bye is None
        else f", a bye for {Revision.objects.select_related('competitor').get(pk=next_round.bye)}"
    )
    logger.info(
        "%s: round %d of %d scheduled, %d duel(s)%s",
        tournament,
        current + 1,
        tournament.rounds,
        len(duels),
        bye,
    )
    return True


def _play_round(
    tournament: Tournament, swiss_round: pairing.SwissRound, *, number: int
) -> list[Duel]:
    if swiss_round.bye is not None:
        Participant.objects.filter(tournament=tournament, revision_id=swiss_round.bye).update(
            byes=F("byes") + 1
        )
    return _create_duels(tournament, swiss_round.pairs, round_number=number)


# --- the ladder ----------------------------------------------------------------------


def ladder_refresh_entries(*, tournament: Tournament) -> bool:
    """Make the ladder's entries the newest validated revision of every competitor.

    A revision validated since joins and replaces its competitor's previous one, which
    is withdrawn (its duels stay; ratings are per competitor, so nothing is lost); a
    revision no longer valid (disabled) leaves. Returns whether anything changed.
    """
    newest = {
        revision.competitor_id: revision
        for revision in latest_validated_revisions(tournament.environment)
    }
    changed = False
    for participant in tournament.participants.filter(withdrawn=False).select_related("revision"):
        replacement = newest.get(participant.revision.competitor_id)
        if replacement is None or replacement.pk != participant.revision_id:
            reason = "left" if replacement is None else f"was replaced by {replacement}"
            changed |= participant_withdraw(participant=participant, reason=reason)
    playing = set(
        tournament.participants.filter(withdrawn=False).values_list("revision_id", flat=True)
    )
    for revision in newest.values():
        if revision.pk in playing:
            continue
        now = timezone.now()
        # get_or_create survives another manager creating the same row first.
        participant, created = Participant.objects.get_or_create(
            tournament=tournament, revision=revision, defaults={"joined_at": now}
        )
        rejoined = not created and Participant.objects.filter(
            pk=participant.pk, withdrawn=True
        ).update(withdrawn=False, joined_at=now)
        if created or rejoined:
            changed = True
            logger.info("%s: %s joined", tournament, revision)
    if changed:
        tournament_settle(tournament=tournament, rerank=True)
    return changed


def ladder_matchmaker() -> Matchmaker:
    return Matchmaker(
        wait_seconds=settings.ARENA_LADDER_WAIT_SECONDS,
        newcomer_duels=settings.ARENA_LADDER_NEWCOMER_DUELS,
        fill_seconds=settings.ARENA_ONLINE_FILL_SECONDS,
    )


def ladder_matchmake(*, tournament: Tournament, now: datetime | None = None) -> int:
    """Fill the ladder's free duel slots (``ARENA_LADDER_CONCURRENT_DUELS`` queued or
    running at once between hosted agents, and fewer than one per ``players`` hosted
    entries; ``ARENA_ONLINE_CONCURRENT_DUELS`` with an online agent or an LLM player) with
    the best pairings of its idle agents; returns duels created."""
    now = now or timezone.now()
    ladder = Tournament.objects.get(pk=tournament.pk)
    if not ladder.is_ladder or ladder.status != TournamentStatus.RUNNING:
        return 0
    # Read before counting the busy duels: the claim below compares against it.
    seen_total = ladder.duels_total
    active = Duel.objects.filter(tournament=ladder, status__in=ACTIVE)
    active_networked = (active.with_online_seat() | active.with_llm_seat()).distinct().count()
    active_hosted = active.count() - active_networked
    slots = settings.ARENA_LADDER_CONCURRENT_DUELS - active_hosted
    online_slots = settings.ARENA_ONLINE_CONCURRENT_DUELS - active_networked
    if slots <= 0 and online_slots <= 0:
        return 0
    size = ladder.environment.players
    idle = _ladder_idle_agents(ladder, now)
    hosted = sum(not agent.networked for agent in idle) + size * active_hosted
    limit = hosted_duel_limit(hosted, size=size, slots=settings.ARENA_LADDER_CONCURRENT_DUELS)
    slots = min(slots, limit - active_hosted)
    pairs = ladder_matchmaker().groupings(idle, size=size, slots=slots, online_slots=online_slots)
    if not pairs:
        return 0
    with transaction.atomic():
        # A ladder's total only grows (cancelled duels count): a manager that matched the
        # same free slots a moment earlier has moved it, and this one leaves them.
        claimed = Tournament.objects.filter(
            pk=ladder.pk, status=TournamentStatus.RUNNING, duels_total=seen_total
        ).update(duels_total=seen_total + len(pairs))
        if not claimed:
            return 0
        duels = _create_duels(ladder, _seats_balanced(ladder, pairs))
        _start(duels)
    logger.info("%s: %d duel(s) scheduled", ladder, len(duels))
    return len(duels)


def _seats_balanced(
    ladder: Tournament, pairs: Sequence[tuple[LadderAgent, ...]]
) -> list[tuple[int, ...]]:
    """Each pair as (player 1, player 2) so that, over the ladder, each of two agents is
    player 1 (who moves first in a duel's even-numbered matches) as often as the other:
    with an odd number of matches per duel that is who moves first more often. A group of
    more than two keeps its order: its seats rotate within the duel, evenly over a
    number of matches that is a multiple of the seats (``ladder_matches_per_duel``)."""
    as_seat_1 = Counter(
        (group[0][0], group[1][0])
        for group in DuelSeat.objects.filter(duel__tournament=ladder, duel__num_players=2)
        .groups("revision_id")
        .values()
        if len(group) == 2
    )
    ordered: list[tuple[int, ...]] = []
    for group in pairs:
        if len(group) > 2:
            ordered.append(tuple(agent.key for agent in group))
            continue
        one, two = group
        if as_seat_1[(one.key, two.key)] > as_seat_1[(two.key, one.key)]:
            one, two = two, one
        ordered.append((one.key, two.key))
    return ordered


def _ladder_idle_agents(ladder: Tournament, now: datetime) -> list[LadderAgent]:
    """The entries with no duel queued or running, with their places on the published
    leaderboard and their waiting times; an online agent only while it is in the queue and
    connected."""
    # The duels being played (a few: the ladder's slots); the rest of the history is in
    # each entry's counters (``_ladder_entries_count``), read with the entries.
    busy = set(
        DuelSeat.objects.filter(
            duel__in=Duel.objects.filter(tournament=ladder, status__in=ACTIVE)
        ).values_list("revision_id", flat=True)
    )
    # An online agent being evaluated has its seat taken: one game at a time.
    evaluated = set(
        Evaluation.objects.active()
        .with_online_seat()
        .values_list("revision__competitor_id", flat=True)
    )
    # One row per entry, with only what pairing needs: a ladder of thousands is read
    # every second (loading its revisions whole took a second at 10,000 entries).
    entries = [
        entry
        for entry in ladder.participants.filter(withdrawn=False)
        .order_by("pk")
        .values_list(
            "revision_id",
            "revision__competitor_id",
            "revision__competitor__kind",
            "joined_at",
            "last_duel_at",
            "duels_played",
            "revision__competitor__leaderboard_entry__revision_id",
            "revision__competitor__leaderboard_entry__score",
            "revision__competitor__leaderboard_entry__score_sd",
            "revision__competitor__online_seat__queued_at",
        )
        if entry[0] not in busy and entry[1] not in evaluated
    ]
    # Presence is the stream: a queued model whose client holds none is not paired.
    queued = {
        competitor: queued_at
        for _, competitor, kind, *_, queued_at in entries
        if kind == CompetitorKind.ONLINE and queued_at is not None
    }
    present = online_present(Competitor(pk=competitor) for competitor in queued)
    agents = []
    for revision, competitor, kind, joined_at, last_duel_at, duels, fitted, score, sd, _ in entries:
        if kind == CompetitorKind.ONLINE and competitor not in present:
            continue
        since = max(
            moment
            for moment in (last_duel_at, joined_at, ladder.started_at, queued.get(competitor))
            if moment is not None
        )
        agents.append(
            LadderAgent(
                key=revision,
                competitor=competitor,
                # Where the published leaderboard places it; a revision not on it yet
                # (no rated match, or newer than the last fit) is as the fit's prior.
                mu=score if fitted == revision else UNFITTED_SCORE,
                sigma=sd if fitted == revision else UNFITTED_SCORE_SD,
                duels=duels,
                waiting=(now - since).total_seconds(),
                online=kind == CompetitorKind.ONLINE,
                waits_on_network=kind == CompetitorKind.LLM,
            )
        )
    return agents


# --- duels ---------------------------------------------------------------------------


def duel_rerun(*, duel: Duel) -> bool:
    """Queue a failed duel again (with fresh attempts) and start it. Returns whether this
    call did: its job must still be failed, so of two organizers clicking at once one
    re-runs it."""
    job = job_of(kind=JobKind.DUEL, subject_id=duel.pk)
    if job is None or job.status != JobStatus.FAILED:
        return False
    with transaction.atomic():
        if not job_retry(job=job):
            return False
        Duel.objects.filter(pk=duel.pk).update(error="", result="")
        if duel.tournament_id:
            Tournament.objects.filter(pk=duel.tournament_id, status=TournamentStatus.FAILED).update(
                status=TournamentStatus.RUNNING, ended_at=None
            )
            tournament_settle(tournament=Tournament.objects.get(pk=duel.tournament_id))
    return True


def duel_job_failed(*, job: Job) -> None:
    """A duel the watchdog gave up on (or whose agents no worker could prepare): an
    infrastructure failure, counted in its tournament's failed duels, never a result."""
    duel = Duel.objects.get(pk=job.duel_id)
    Duel.objects.filter(pk=duel.pk).update(result="")
    if duel.tournament_id is not None:
        duel.refresh_from_db()
        tournament_duel_finished(duel=duel)


def tournament_duel_finished(*, duel: Duel) -> None:
    """Rate a finished duel of a tournament, then recount, re-rank and maybe close the
    tournament. A ladder's entries count the duel (``Participant.duels_played``,
    ``last_duel_at``, which its matchmaking reads); its standings wait for the tournament
    manager (``ARENA_LADDER_STANDINGS_SECONDS``)."""
    assert duel.tournament_id is not None
    with transaction.atomic():
        # The tournament's row first, as every writer of it: duels finishing at once
        # queue up here rather than deadlock on their ratings.
        tournament = Tournament.objects.select_for_update().get(pk=duel.tournament_id)
        if duel.status == DuelStatus.SUCCEEDED:
            ratings_update_from_duel(duel=duel)
        if tournament.is_ladder:
            _ladder_entries_count(ladder=tournament, duel=duel)
        tournament_settle(tournament=tournament, rerank=not tournament.is_ladder, rank_ladder=False)


def _ladder_entries_count(*, ladder: Tournament, duel: Duel) -> None:
    """The duel in its players' entries: played to the end (a success), and when it
    ended (either way). Once per duel: its end is reported once."""
    ended = duel.ended_at or timezone.now()
    Participant.objects.filter(
        tournament=ladder, revision__in=[seat.revision_id for seat in duel.seats.all()]
    ).update(
        duels_played=F("duels_played") + (1 if duel.status == DuelStatus.SUCCEEDED else 0),
        last_duel_at=Greatest(Coalesce("last_duel_at", Value(ended)), Value(ended)),
    )


def _create_duels(
    tournament: Tournament,
    groups: Iterable[Sequence[int]],
    *,
    round_number: int | None = None,
) -> list[Duel]:
    """Queued duels between revisions (by id, player 1's first: two, or more in a game
    of more than two players); started by ``_start`` after the commit."""
    seeds = random.SystemRandom()
    groups = [tuple(group) for group in groups]
    return Duel.objects.bulk_seated(
        [
            Duel(
                tournament=tournament,
                environment_id=tournament.environment_id,
                round=round_number,
                num_matches=tournament.matches_per_duel,
                seed=seeds.randrange(2**31),
            )
            for _ in groups
        ],
        groups,
    )


def _start(duels: Sequence[Duel]) -> None:
    """Queue each duel's job; its task starts after the commit."""
    jobs_queue(kind=JobKind.DUEL, subject_ids=[duel.pk for duel in duels])


def _cancel_queued_duels(duels: QuerySet[Duel], why: str) -> int:
    return jobs_cancel(jobs=Job.objects.filter(duel__in=duels), why=f"Not played: {why}.")


# --- progress and standings --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Tally:
    """A tournament's duels counted by status, and what the stored counts should be."""

    total: int
    done: int
    failed: int
    active: int
    players: int


def _tally(tournament: Tournament) -> _Tally:
    counts = dict(
        Duel.objects.filter(tournament=tournament)
        .order_by()
        .values_list("status")
        .annotate(count=Count("pk"))
    )
    players = tournament.participants.filter(withdrawn=False).count()
    scheduled = sum(count for status, count in counts.items() if status != DuelStatus.CANCELLED)
    total = scheduled
    if tournament.is_ladder:
        total = sum(counts.values())  # only grows: the matchmaking claim relies on it
    elif tournament.format == TournamentFormat.SWISS and tournament.status in (
        TournamentStatus.RUNNING,
        TournamentStatus.FAILED,
    ):
        rounds_left = max(0, (tournament.rounds or 0) - tournament.current_round)
        total += rounds_left * (players // 2)
    return _Tally(
        total=total,
        done=counts.get(DuelStatus.SUCCEEDED, 0),
        failed=counts.get(DuelStatus.FAILED, 0),
        active=sum(counts.get(status, 0) for status in ACTIVE),
        players=players,
    )


def _is_over(tournament: Tournament, tally: _Tally) -> bool:
    if tournament.is_ladder or tally.active:
        return False
    if tournament.format == TournamentFormat.SWISS:
        return (
            bool(tally.failed)
            or tournament.current_round >= (tournament.rounds or 0)
            or tally.players < 2
        )
    return True


def _failure_note(tournament: Tournament, failed: int) -> str:
    if not failed:
        return ""
    note = f"{failed} duel(s) failed; re-run them from the admin"
    if tournament.format == TournamentFormat.SWISS:
        note += " (the next round waits for them)"
    return note


def _stored(tournament: Tournament, tally: _Tally) -> dict[str, object]:
    fields: dict[str, object] = {
        "duels_total": tally.total,
        "duels_done": tally.done,
        "duels_failed": tally.failed,
    }
    if tournament.status in (TournamentStatus.RUNNING, TournamentStatus.FAILED):
        fields["error"] = _failure_note(tournament, tally.failed)
    return fields


def _out_of_date(tournament: Tournament, tally: _Tally) -> bool:
    if any(
        getattr(tournament, name) != value for name, value in _stored(tournament, tally).items()
    ):
        return True
    return tournament.status == TournamentStatus.RUNNING and _is_over(tournament, tally)


def _ranking_due(tournament: Tournament, tally: _Tally, now: datetime) -> bool:
    """Whether a ladder's standings are to be computed again: duels ended since they were,
    and ``ARENA_LADDER_STANDINGS_SECONDS`` have passed, and ten times what computing them
    took last time (``fit_due``); at once when it is no longer running, for its final
    standings."""
    if not tournament.is_ladder or tournament.ranked_duels == tally.done:
        return False
    if tournament.status != TournamentStatus.RUNNING:
        return True
    return fit_due(
        tournament.ranked_at,
        tournament.ranking_seconds,
        settings.ARENA_LADDER_STANDINGS_SECONDS,
        now,
    )


def tournament_settle(
    *, tournament: Tournament, rerank: bool = False, rank_ladder: bool = True
) -> bool:
    """Bring the progress counts, the error and (when they changed, or ``rerank``) the
    standings in line with the duels, and finish a running tournament when nothing is
    left to play: completed, or failed if a duel failed. A ladder's standings are
    computed when ``rerank`` asks or they are due (``_ranking_due``) and ``rank_ladder``
    allows (not at a duel's end). Returns whether it changed anything besides the
    standings."""
    now = timezone.now()
    seen = Tournament.objects.get(pk=tournament.pk)
    seen_tally = _tally(tournament)
    if (
        not rerank
        and not _out_of_date(seen, seen_tally)
        and not (rank_ladder and _ranking_due(seen, seen_tally, now))
    ):
        return False  # the usual case, seen without taking the row lock
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        tally = _tally(locked)
        changed = _out_of_date(locked, tally)
        stored = _stored(locked, tally)
        if (
            (rerank or (rank_ladder and _ranking_due(locked, tally, now)))
            if locked.is_ladder
            else (changed or rerank)
        ):
            started = time.perf_counter()
            standings_update(tournament=locked)
            stored |= {
                "ranked_at": now,
                "ranked_duels": tally.done,
                "ranking_seconds": time.perf_counter() - started,
            }
        Tournament.objects.filter(pk=locked.pk).update(**stored)
        for name, value in stored.items():
            setattr(locked, name, value)
        if locked.status == TournamentStatus.RUNNING and _is_over(locked, tally):
            status = TournamentStatus.FAILED if tally.failed else TournamentStatus.COMPLETED
            now = timezone.now()
            if Tournament.objects.filter(pk=locked.pk, status=TournamentStatus.RUNNING).update(
                status=status, ended_at=now
            ):
                locked.status, locked.ended_at = status, now
                logger.info("%s: %s", locked, status.label.lower())
    for name in ("status", "ended_at", *stored):
        setattr(tournament, name, getattr(locked, name))
    return changed


def _conservative_ratings(competitors: Iterable[int]) -> dict[int, float]:
    """mu - 3 sigma by competitor; a competitor never rated is missing (0 by default)."""
    return {
        rating.competitor_id: rating.conservative
        for rating in Rating.objects.filter(competitor__in=list(competitors))
    }


def _standings(tournament: Tournament) -> list[Participant]:
    """Every participant with points, record and rank recomputed (not saved), best first.

    Round robin and Swiss: ``referee.standings`` (2 points a duel won or a bye, 1 a draw;
    then, Swiss only, Buchholz; then duels won, then match score). Ladder: a
    Bradley-Terry fit of its own matches (``leaderboard.ladder_strengths``), a participant
    without a match yet last. Withdrawn ones rank last either way; equal keys share a rank.
    """
    participants = {
        participant.revision_id: participant
        for participant in tournament.participants.select_related("revision")
    }
    for participant in participants.values():
        participant.points = bye_points(participant.byes)
        participant.wins = participant.losses = participant.draws = 0
        participant.score = 0.0
    # One query (the duel's result beside each seat): a duel that finishes meanwhile is
    # counted whole or not at all.
    seats = DuelSeat.objects.filter(
        duel__tournament=tournament, duel__status=DuelStatus.SUCCEEDED
    ).groups("duel__result", "revision_id", "score")
    # Two players: won, drawn or lost (and Swiss meetings); more: ranked by score.
    duels: list[tuple[int, int, str, float, float]] = []
    for group in seats.values():
        if not all(revision in participants for _, revision, _ in group):
            continue
        if len(group) == 2:
            (result, first, first_score), (_, second, second_score) = group
            duels.append((first, second, result, first_score, second_score))
            record_duel(
                participants[first],
                participants[second],
                result=result,
                first_score=first_score,
                second_score=second_score,
            )
        else:
            record_group(
                [participants[revision] for _, revision, _ in group],
                scores=[score for _, _, score in group],
            )
    swiss = tournament.format == TournamentFormat.SWISS
    if swiss:
        _set_buchholz(participants, duels)
    if tournament.is_ladder:
        strengths = ladder_strengths(tournament=tournament)

        def key(p: Participant) -> tuple[object, ...]:
            strength = strengths.get(p.revision_id)
            return (p.withdrawn, strength is None, -(strength or 0.0))

    elif swiss:

        def key(p: Participant) -> tuple[object, ...]:
            return (p.withdrawn, *standing_key(p, buchholz=p.buchholz))

    else:

        def key(p: Participant) -> tuple[object, ...]:
            return (p.withdrawn, *standing_key(p))

    ordered = sorted(participants.values(), key=lambda p: (key(p), p.seed or 0, p.pk))
    for participant, rank in zip(ordered, shared_ranks(ordered, key), strict=True):
        participant.rank = rank
    return ordered


def _set_buchholz(
    participants: dict[int, Participant], duels: Iterable[tuple[int, int, str, float, float]]
) -> None:
    """Each Swiss participant's Buchholz, from its points (already tallied) and the
    scored duels: one without a winner or a draw is no meeting either."""
    scored = (DuelResult.PLAYER_1_WIN, DuelResult.PLAYER_2_WIN, DuelResult.DRAW)
    meetings = [
        (first, second)
        for first, second, result, _, _ in duels
        if result in scored and first in participants and second in participants
    ]
    buchholz = buchholz_scores(
        {revision: p.points for revision, p in participants.items()},
        meetings=meetings,
        byes={revision: p.byes for revision, p in participants.items()},
    )
    for revision, participant in participants.items():
        participant.buchholz = buchholz[revision]


#: What a participant's standing is made of: written by ``standings_update``.
STANDING_FIELDS = ("points", "wins", "losses", "draws", "score", "buchholz", "rank")


def standings_update(*, tournament: Tournament) -> list[Participant]:
    """Recompute every participant's points, record and rank from its finished duels,
    and write those that changed (a ladder of thousands: a new duel moves a few)."""
    stored = {
        pk: tuple(standing)
        for pk, *standing in tournament.participants.values_list("pk", *STANDING_FIELDS)
    }
    ordered = _standings(tournament)
    Participant.objects.bulk_update(
        [
            participant
            for participant in ordered
            if stored.get(participant.pk)
            != tuple(getattr(participant, field) for field in STANDING_FIELDS)
        ],
        list(STANDING_FIELDS),
        batch_size=BULK_UPDATE_ROWS,
    )
    return ordered
