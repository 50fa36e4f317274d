"""Swiss: round 1 paired by seed; each next round, scheduled by the tournament manager once
the previous one is over, paired by score groups (``tournament_manager.pairing``)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import F

from core.models import (
    Duel,
    DuelSeat,
    DuelStatus,
    LeaderboardEntry,
    Participant,
    Revision,
    Tournament,
    TournamentFormat,
    TournamentStatus,
)
from tournament_manager import pairing
from tournament_manager.services.scheduling import ACTIVE, duels_create, duels_start
from tournament_manager.services.settlement import tournament_settle
from tournament_manager.services.standings import BULK_UPDATE_ROWS, standings_compute

logger = logging.getLogger(__name__)


def swiss_first_round(tournament: Tournament, participants: list[Participant]) -> list[Duel]:
    """Seed by the published leaderboard (``LeaderboardQuerySet.published``: ranked entries
    by rank, then the provisional ones by score), then those not on it; ties by order of
    entry. It seeds better than openskill's mu - 3 sigma did (bench_seeding:
    BENCHMARKS.md). Then pair round 1 by seed."""
    places = {
        competitor: place
        for place, competitor in enumerate(
            LeaderboardEntry.objects.filter(
                competitor__in=[p.revision.competitor_id for p in participants]
            )
            .published()
            .values_list("competitor_id", flat=True)
        )
    }
    missing = len(places)
    seeded = sorted(
        participants, key=lambda p: (places.get(p.revision.competitor_id, missing), p.pk)
    )
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
            (p for p in standings_compute(tournament) if not p.withdrawn),
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
        duels_start(duels)
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
    return duels_create(tournament, swiss_round.pairs, round_number=number)
