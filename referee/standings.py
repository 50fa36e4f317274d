"""Standings of a round robin (and of a Swiss tournament): one rule, for the command line and
the tournament manager.

A duel won (or a bye) is worth 2 points, a draw 1, a loss 0. Players rank by points, then by
duels won, then by total match score; players equal on all three share a rank (1, 2, 2, 4).
A duel that failed for a reason outside the agents is not scored at all.

A duel of more than two players counts as the duels each two of its players would have
played: every player wins, draws or loses against each other one by their total match
scores (``record_group``), so a sole winner of a 4-player duel gets 3 wins and 6 points.

Swiss adds a tie-break after points, Buchholz: the sum of the opponents' points (a
stronger field met ranks higher). A bye counts as a virtual opponent on the player's own
points, as FIDE's tie-break rules do, so sitting out neither helps nor hurts.

Match scores are added and compared as exact fractions (``match_points``): a total of
127/3 is 127/3, and two totals of 25/3 tie however they were reached.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

from referee.match_points import exact_score
from referee.results import Outcome

WIN_POINTS = 2
DRAW_POINTS = 1


@dataclasses.dataclass
class Standing:
    """A player's tally (a tournament's standings tally in these, then copy the figures
    into its participant rows, whose score is a float)."""

    name: str
    points: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    #: Each duel total it scored, as given, and how many times: ``score`` sums them
    #: exactly. Counted rather than added up as it goes, since a fraction's sum costs
    #: microseconds and a ladder's standings read a million totals of a few values.
    totals: Counter[float | Fraction] = dataclasses.field(default_factory=Counter)

    @property
    def score(self) -> Fraction:
        """The sum of its duels' total match scores, exact."""
        return sum(
            (exact_score(total) * count for total, count in self.totals.items()), Fraction(0)
        )

    def add_score(self, total: float | Fraction) -> None:
        if total:
            self.totals[total] += 1


def record_duel(
    first: Standing,
    second: Standing,
    *,
    result: str,
    first_score: float | Fraction,
    second_score: float | Fraction,
) -> None:
    """Add a scored duel (``result``: an ``Outcome`` value, from the first player's side;
    the scores: each player's total, as stored, ``match_points.exact_score``)."""
    first.add_score(first_score)
    second.add_score(second_score)
    if result == Outcome.DRAW:
        for record in (first, second):
            record.draws += 1
            record.points += DRAW_POINTS
        return
    if result not in (Outcome.PLAYER_1_WIN, Outcome.PLAYER_2_WIN):
        return
    winner, loser = (first, second) if result == Outcome.PLAYER_1_WIN else (second, first)
    winner.wins += 1
    winner.points += WIN_POINTS
    loser.losses += 1


def record_group(records: Sequence[Standing], *, scores: Sequence[float | Fraction]) -> None:
    """Add a scored duel of two or more players (``scores``: their total match scores,
    in player order): one duel between each two of them, decided by their scores."""
    # Compared as the exact totals they stand for: equal points are a draw.
    exact = [exact_score(score) for score in scores]
    for (first, first_score), (second, second_score) in itertools.combinations(
        zip(records, exact, strict=True), 2
    ):
        if first_score > second_score:
            result = Outcome.PLAYER_1_WIN
        elif second_score > first_score:
            result = Outcome.PLAYER_2_WIN
        else:
            result = Outcome.DRAW
        record_duel(first, second, result=result, first_score=0, second_score=0)
    for record, score in zip(records, scores, strict=True):
        record.add_score(score)


def bye_points(byes: int) -> int:
    """A player left out of a round (an odd count) scores as if it won a duel."""
    return WIN_POINTS * byes


def standing_key(record: Standing, *, buchholz: int | None = None) -> tuple[int | Fraction, ...]:
    """Sorts best first: points, then (when given, Swiss) Buchholz, then duels won, then
    match score (exact: equal totals tie, however they were added up)."""
    tie_break = () if buchholz is None else (-buchholz,)
    return (-record.points, *tie_break, -record.wins, -record.score)


T = TypeVar("T")
P = TypeVar("P", bound=Hashable)


def buchholz_scores(
    points: Mapping[P, int], *, meetings: Iterable[tuple[P, P]], byes: Mapping[P, int]
) -> dict[P, int]:
    """Each player's Buchholz: the points of every opponent of a scored duel in
    ``meetings`` (one pair a duel, so a rematch counts twice), plus its own points for
    each bye."""
    totals = {player: points[player] * byes.get(player, 0) for player in points}
    for first, second in meetings:
        totals[first] += points[second]
        totals[second] += points[first]
    return totals


def shared_ranks(ordered: Sequence[T], key: Callable[[T], Hashable]) -> list[int]:
    """The rank of each of ``ordered`` (sorted best first by ``key``): equal keys share one."""
    ranks: list[int] = []
    rank, previous = 0, None
    for position, item in enumerate(ordered, start=1):
        if position == 1 or key(item) != previous:
            rank, previous = position, key(item)
        ranks.append(rank)
    return ranks
