"""Standings: every participant's points, record and rank, recomputed from its finished
duels."""

from __future__ import annotations

from collections.abc import Iterable

from core.models import DuelResult, DuelSeat, DuelStatus, Participant, Tournament, TournamentFormat
from referee.standings import (
    Standing,
    buchholz_scores,
    bye_points,
    record_duel,
    record_group,
    shared_ranks,
    standing_key,
)
from tournament_manager.leaderboard import ladder_strengths

#: Rows one bulk UPDATE writes: Django writes each field as a CASE over the rows, which
#: the database reads row by row, so one statement for a ladder of 10,000 entries took
#: minutes (10,000 x 10,000 comparisons a field); in batches it is linear.
BULK_UPDATE_ROWS = 500


def standings_compute(tournament: Tournament) -> list[Participant]:
    """Every participant with points, record and rank recomputed (not saved), best first.

    Round robin and Swiss: ``referee.standings`` (2 points a duel won or a bye, 1 a draw;
    then, Swiss only, Buchholz; then duels won, then match score, summed and compared as
    exact fractions and stored as the float nearest to the sum). Ladder: a Bradley-Terry
    fit of its own matches (``leaderboard.ladder_strengths``), a participant without a
    match yet last. Withdrawn ones rank last either way; equal keys share a rank.
    """
    participants = {
        participant.revision_id: participant
        for participant in tournament.participants.select_related("revision")
    }
    # Tallied apart from the rows, whose score is a float: a sum of floats drifts.
    tallies = {
        revision: Standing(str(revision), points=bye_points(participant.byes))
        for revision, participant in participants.items()
    }
    # One query (the duel's result beside each seat): a duel that finishes meanwhile is
    # counted whole or not at all.
    seats = DuelSeat.objects.filter(
        duel__tournament=tournament, duel__status=DuelStatus.SUCCEEDED
    ).groups("duel__result", "revision_id", "score")
    # Two players: won, drawn or lost (and Swiss meetings); more: ranked by score.
    duels: list[tuple[int, int, str]] = []
    for group in seats.values():
        if not all(revision in participants for _, revision, _ in group):
            continue
        if len(group) == 2:
            (result, first, first_score), (_, second, second_score) = group
            duels.append((first, second, result))
            record_duel(
                tallies[first],
                tallies[second],
                result=result,
                first_score=first_score,
                second_score=second_score,
            )
        else:
            record_group(
                [tallies[revision] for _, revision, _ in group],
                scores=[score for _, _, score in group],
            )
    for revision, participant in participants.items():
        tally = tallies[revision]
        participant.points, participant.wins = tally.points, tally.wins
        participant.draws, participant.losses = tally.draws, tally.losses
        participant.score = float(tally.score)
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
            return (p.withdrawn, *standing_key(tallies[p.revision_id], buchholz=p.buchholz))

    else:

        def key(p: Participant) -> tuple[object, ...]:
            return (p.withdrawn, *standing_key(tallies[p.revision_id]))

    ordered = sorted(participants.values(), key=lambda p: (key(p), p.seed or 0, p.pk))
    for participant, rank in zip(ordered, shared_ranks(ordered, key), strict=True):
        participant.rank = rank
    return ordered


def _set_buchholz(
    participants: dict[int, Participant], duels: Iterable[tuple[int, int, str]]
) -> None:
    """Each Swiss participant's Buchholz, from its points (already tallied) and the
    scored duels: one without a winner or a draw is no meeting either."""
    scored = (DuelResult.PLAYER_1_WIN, DuelResult.PLAYER_2_WIN, DuelResult.DRAW)
    meetings = [
        (first, second)
        for first, second, result in duels
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
    ordered = standings_compute(tournament)
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
