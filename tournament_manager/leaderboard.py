"""The published leaderboard of every environment, refitted from the whole match history.

The online openskill ratings (``tournament_manager.ratings``) change with every match.
What the leaderboard publishes is a batch fit instead
(``tournament_manager.bradley_terry``) of every rated match between the competitors'
current revisions, their newest validated ones, since the environment's ratings were
last reset: a revision does not change, so its first matches count as much as its latest.
Its entries (score ± sd) also steer the ladder's matchmaking.
The matches of two players are read as their pairings' counts (``RatedPairing``, kept as
each duel is rated), not one by one: at ten thousand agents and a million matches that is
what keeps a refit within seconds.

The tournament manager refits an environment when what the fit would see has changed (a
rated match, a newly validated or a disabled revision), and the demo and
``reset_ratings`` do so directly. Several managers may run: the refit is claimed with a
conditional update of the environment's stored key, so each change is fitted once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import (
    Exists,
    Max,
    OuterRef,
    QuerySet,
)
from django.utils import timezone

from core.models import (
    DuelSeat,
    DuelStatus,
    Environment,
    LeaderboardEntry,
    LeaderboardPoint,
    Match,
    RatedPairing,
    RatingChange,
    Tournament,
)
from environments.registry import InvalidEnvironmentInfo, UnknownEnvironment, make_environment
from tournament_manager.bradley_terry import ELO_PER_UNIT, Games, GameTable, fit
from tournament_manager.selectors import latest_validated_revision_ids


@dataclasses.dataclass
class _Record:
    matches: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0


def _last_reset(environment: Environment) -> int:
    """The id of the environment's latest rating reset (0 if never reset): only the
    changes after it count."""
    last = RatingChange.objects.filter(
        reason="reset", rating__competitor__environment=environment
    ).aggregate(last=Max("pk"))["last"]
    return last or 0


def leaderboard_key(environment: Environment, current: Iterable[int]) -> str:
    """What the fit would see, hashed: the latest rating change, the current revisions
    (ids) and the provisional threshold. It changes exactly when a refit could."""
    last_change = RatingChange.objects.filter(
        rating__competitor__environment=environment
    ).aggregate(last=Max("pk"))["last"]
    revisions = sorted(current)
    seen = (
        f"{last_change or 0};{','.join(map(str, revisions))};"
        f"{settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES}"
    )
    return hashlib.sha256(seen.encode()).hexdigest()


def _pairs_in_groups(
    matches: QuerySet[Match], among: set[int] | None
) -> tuple[dict[tuple[int, int], tuple[int, float, int]], dict[int, _Record]]:
    """The matches of more than two players, as one game for each two of their players:
    by (revision in the earlier seat, the other) the games, the first one's points (1 a
    win, 1/2 a draw, by the match's scores) and the draws. And each revision's record of
    those matches, a match once: won when it scored best (alone, or with some but not
    all), drawn when every player scored alike, lost when anyone scored more; a match
    counts for a revision that met at least one other of ``among`` in it."""
    rows = list(
        matches.filter(duel__num_players__gt=2).order_by().values_list("duel_id", "seats", "scores")
    )
    seated: dict[int, dict[int, int]] = defaultdict(dict)
    for duel, number, revision in DuelSeat.objects.filter(
        duel__in={row[0] for row in rows}
    ).values_list("duel_id", "number", "revision_id"):
        seated[duel][number] = revision
    pairs: dict[tuple[int, int], tuple[int, float, int]] = {}
    records: dict[int, _Record] = defaultdict(_Record)
    for duel, seats, scores in rows:
        revisions = seated[duel]
        met: set[int] = set()
        for first_seat, second_seat in itertools.combinations(range(len(seats)), 2):
            first, second = seats[first_seat], seats[second_seat]
            key = (revisions[first], revisions[second])
            if among is not None and not set(key) <= among:
                continue
            met |= {first, second}
            mine, theirs = scores[first - 1], scores[second - 1]
            games, points, draws = pairs.get(key, (0, 0.0, 0))
            pairs[key] = (
                games + 1,
                points + (1.0 if mine > theirs else 0.5 if mine == theirs else 0.0),
                draws + (mine == theirs),
            )
        best, everyone_alike = max(scores), len(set(scores)) == 1
        for player in met:
            record = records[revisions[player]]
            record.matches += 1
            if everyone_alike:
                record.draws += 1
            elif scores[player - 1] == best:
                record.wins += 1
            else:
                record.losses += 1
    return pairs, records


def _games(
    pairings: QuerySet[RatedPairing], matches: QuerySet[Match], *, among: set[int] | None = None
) -> tuple[GameTable, dict[int, _Record]]:
    """The games the fit reads, and every revision's record: the rated ``pairings`` (duels
    of two players) and, among ``matches``, those of more than two players (a game between
    each two of them in the fit, once in each player's record). ``among``: only games
    between these revisions."""
    if among is not None:
        pairings = pairings.filter(one__in=among, two__in=among)
    rows = np.fromiter(
        itertools.chain.from_iterable(
            pairings.order_by().values_list(
                "one_id", "two_id", "first_player", "games", "one_wins", "draws"
            )
        ),
        dtype=np.int64,
    ).reshape(-1, 6)
    one, two, first_player, total, one_wins, draws = rows.T
    two_wins = total - one_wins - draws
    one_first = first_player == 1
    games = GameTable(
        first=np.where(one_first, one, two),
        second=np.where(one_first, two, one),
        games=total,
        first_points=np.where(one_first, one_wins, two_wins) + draws / 2,
    )
    # Each pairing in both players' records, summed by revision at once.
    revisions, where = np.unique(np.concatenate([one, two]), return_inverse=True)
    sums = [
        np.bincount(where, weights=np.concatenate(columns), minlength=len(revisions))
        for columns in ((total, total), (one_wins, two_wins), (draws, draws), (two_wins, one_wins))
    ]
    records: dict[int, _Record] = defaultdict(_Record)
    for revision, counted, wins, drawn, losses in zip(revisions.tolist(), *sums, strict=True):
        records[revision] = _Record(int(counted), int(wins), int(drawn), int(losses))
    pairs, in_groups = _pairs_in_groups(matches, among)
    games += GameTable.of(
        Games(first, second, total, points) for (first, second), (total, points, _) in pairs.items()
    )
    for revision, counted in in_groups.items():
        record = records[revision]
        record.matches += counted.matches
        record.wins += counted.wins
        record.draws += counted.draws
        record.losses += counted.losses
    return games, records


def _in_turns(environment: Environment) -> bool:
    """Whether the game is played in turns (someone moves first); an unknown one is taken
    to be."""
    try:
        return not make_environment(environment.game, players=environment.players).simultaneous
    except (UnknownEnvironment, InvalidEnvironmentInfo, ValueError):
        return True


#: A fit (a leaderboard's, a ladder's standings) that took a second or more runs again
#: only this many times its duration later: however large the field, fitting takes at most
#: about a tenth of the tournament manager's time, and what changes meanwhile waits for
#: the next fit. A quicker fit (a field of hundreds) is never held back.
FIT_SHARE = 10
FIT_HELD_FROM_SECONDS = 1.0


def fit_due(last_at: datetime | None, last_seconds: float, minimum: float, now: datetime) -> bool:
    """Whether a fit last run at ``last_at`` (taking ``last_seconds``) may run again at
    ``now``: ``minimum`` seconds later at the earliest, and ``FIT_SHARE`` times its
    duration if that was ``FIT_HELD_FROM_SECONDS`` or more."""
    if last_at is None:
        return True
    held = FIT_SHARE * last_seconds if last_seconds >= FIT_HELD_FROM_SECONDS else 0.0
    return (now - last_at).total_seconds() >= max(minimum, held)


def leaderboard_refit(*, environment: Environment, force: bool = False) -> bool:
    """Fit the environment's leaderboard again when what it would see has changed (or
    ``force``), replacing every entry, and when its last fit is not too recent
    (``fit_due``); returns whether this call changed any entry (an empty leaderboard that
    stays empty only records what it saw)."""
    stored, fitted_at, fit_seconds, epoch = Environment.objects.values_list(
        "leaderboard_key", "leaderboard_fitted_at", "leaderboard_fit_seconds", "ratings_epoch"
    ).get(pk=environment.pk)
    current = latest_validated_revision_ids(environment)
    key = leaderboard_key(environment, current)
    if not force and (key == stored or not fit_due(fitted_at, fit_seconds, 0, timezone.now())):
        return False
    started = time.perf_counter()
    rated = RatingChange.objects.filter(match=OuterRef("pk"), pk__gt=_last_reset(environment))
    games, records = _games(
        RatedPairing.objects.filter(tournament__environment=environment, epoch=epoch),
        Match.objects.filter(Exists(rated)),
        among=set(current),
    )
    played = [revision for revision in current if records[revision].matches]
    now = timezone.now()
    entries: list[LeaderboardEntry] = []
    advantage = None
    if played:
        result = fit(played, games)
        # Only where there is a first move: not in a game of simultaneous moves.
        advantage = ELO_PER_UNIT * result.advantage if _in_turns(environment) else None
        threshold = settings.ARENA_LEADERBOARD_PROVISIONAL_MATCHES
        ranked = {revision for revision in played if records[revision].matches >= threshold}
        ranks = result.ranks(ranked)
        intervals = result.rank_intervals(ranked)
        for revision in played:
            record = records[revision]
            best, worst = intervals[revision]
            entries.append(
                LeaderboardEntry(
                    environment=environment,
                    competitor_id=current[revision],
                    revision_id=revision,
                    rank=ranks.get(revision),
                    rank_best=best,
                    rank_worst=worst,
                    score=result.elo(revision),
                    score_sd=result.elo_sd(revision),
                    matches=record.matches,
                    wins=record.wins,
                    draws=record.draws,
                    losses=record.losses,
                    fitted_at=now,
                )
            )
    with transaction.atomic():
        claimed = Environment.objects.filter(pk=environment.pk, leaderboard_key=stored).update(
            leaderboard_key=key,
            leaderboard_fitted_at=now,
            leaderboard_fit_seconds=time.perf_counter() - started,
            first_move_advantage=advantage,
        )
        if not claimed:
            return False  # another manager refitted it meanwhile
        before = {
            competitor: (revision, matches)
            for competitor, revision, matches in LeaderboardEntry.objects.filter(
                environment=environment
            ).values_list("competitor_id", "revision_id", "matches")
        }
        deleted, _ = LeaderboardEntry.objects.filter(environment=environment).delete()
        LeaderboardEntry.objects.bulk_create(entries)
        # Each score history grows where its rated matches changed.
        LeaderboardPoint.objects.bulk_create(
            LeaderboardPoint(
                competitor_id=entry.competitor_id,
                revision_id=entry.revision_id,
                score=entry.score,
                score_sd=entry.score_sd,
                matches=entry.matches,
                fitted_at=now,
            )
            for entry in entries
            if before.get(entry.competitor_id) != (entry.revision_id, entry.matches)
        )
    environment.leaderboard_key = key
    environment.leaderboard_fitted_at = now
    environment.first_move_advantage = advantage
    return bool(entries or deleted)


def ladder_strengths(*, tournament: Tournament) -> dict[int, float]:
    """A ladder's standings: the same fit, of its own played matches, by revision (a
    revision without a match yet is missing)."""
    games, records = _games(
        RatedPairing.objects.filter(tournament=tournament),
        Match.objects.filter(duel__tournament=tournament, duel__status=DuelStatus.SUCCEEDED),
    )
    played = [revision for revision, record in records.items() if record.matches]
    if not played:
        return {}
    # The order only: no uncertainty to compute.
    result = fit(played, games, uncertainty=False)
    return {revision: result.elo(revision) for revision in played}
