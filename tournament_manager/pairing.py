"""Swiss pairings, as pure functions of the standings (players are ids, best first).

Round 1 pairs by seed, the top half against the bottom half (1 v n/2+1, 2 v n/2+2...),
and the last seed sits out when the count is odd. Later rounds pair score groups: the
players on equal points, in the order given (by seed), top half against bottom half; a
group with an odd count floats its lowest player down to the next group, where it meets
that group's top half first. Nobody meets an opponent again when that can be avoided: the
search tries the other orders of a group's bottom half, then any pairing of the group,
then another player (or more) floating down; when no pairing by score groups avoids a
rematch it pairs the whole field nearest first, and only when nothing avoids one does it
settle for rematches. An odd count gives a bye to the lowest-ranked player among those
with the fewest byes, the next one up only when the rest cannot be paired without a
rematch.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Collection, Iterator, Mapping, Sequence

Pair = tuple[int, int]

#: Steps of the backtracking search before it settles for a pairing with rematches; far
#: more than a tournament of a few dozen players needs, and bounded for a pathological one.
SEARCH_BUDGET = 20_000


@dataclasses.dataclass(frozen=True)
class SwissRound:
    pairs: list[Pair]
    #: Who sits out (an odd count), or None.
    bye: int | None


def first_round(seeded: Sequence[int]) -> SwissRound:
    """Pair by seed: the top half against the bottom half; the last seed gets the bye."""
    players = list(seeded)
    bye = players.pop() if len(players) % 2 else None
    half = len(players) // 2
    return SwissRound(pairs=list(zip(players[:half], players[half:], strict=True)), bye=bye)


def score_groups(ranked: Sequence[int], points: Mapping[int, int]) -> list[list[int]]:
    """The players of ``ranked`` grouped by points, most first, each group in ranked order."""
    by_points: dict[int, list[int]] = {}
    for player in ranked:
        by_points.setdefault(points.get(player, 0), []).append(player)
    return [by_points[group_points] for group_points in sorted(by_points, reverse=True)]


def next_round(
    ranked: Sequence[int],
    *,
    points: Mapping[int, int],
    met: Collection[frozenset[int]],
    byes: Mapping[int, int],
    budget: int = SEARCH_BUDGET,
) -> SwissRound:
    """Pair ``ranked`` (by points, then seed: best first) by score groups (``points``)
    so that nobody meets an opponent from ``met`` again when that can be avoided;
    ``byes`` counts the byes each player already had."""
    players = list(ranked)
    if len(players) % 2 == 0:
        candidates: list[int | None] = [None]
    else:
        # Lowest-ranked first among those with the fewest byes; the next candidates only
        # when the rest cannot be paired without a rematch.
        bottom_up = list(reversed(players))
        candidates = [*sorted(bottom_up, key=lambda player: byes.get(player, 0))]
    search = _Search(met=met, budget=budget)
    for bye in candidates:
        rest = [player for player in players if player != bye]
        pairs = search.pair_groups(score_groups(rest, points), floating=[])
        if pairs is None:
            pairs = _Search(met=met, budget=budget).pair(rest)
        if pairs is not None:
            return SwissRound(pairs=pairs, bye=bye)
    bye = candidates[0]
    rest = [player for player in players if player != bye]
    return SwissRound(pairs=_pair_preferring_new_opponents(rest, met), bye=bye)


class _Search:
    """Depth-first searches for a pairing without rematches, with a shared step budget."""

    def __init__(self, *, met: Collection[frozenset[int]], budget: int) -> None:
        self.met = met
        self.budget = budget

    @property
    def exhausted(self) -> bool:
        return self.budget <= 0

    def is_new(self, pair: Pair) -> bool:
        return frozenset(pair) not in self.met

    def pair_groups(self, groups: list[list[int]], *, floating: list[int]) -> list[Pair] | None:
        """Pair the first group with the players ``floating`` down into it (above it),
        floating its leftovers to the next group, and so on to the last."""
        if not groups:
            return [] if not floating else None
        bracket, later = [*floating, *groups[0]], groups[1:]
        for floaters in self._floaters(bracket, last=not later):
            if self.exhausted:
                return None
            staying = [player for player in bracket if player not in floaters]
            for pairs in self._bracket_pairings(staying):
                rest = self.pair_groups(later, floating=floaters)
                if rest is not None:
                    return [*pairs, *rest]
                if self.exhausted:
                    return None
        return None

    def _floaters(self, bracket: list[int], *, last: bool) -> Iterator[list[int]]:
        """Who floats down: nobody or the lowest player (by the parity), then others,
        then more of them; nobody floats out of the last group."""
        if last:
            yield []
            return
        bottom_up = bracket[::-1]
        for count in range(len(bracket) % 2, len(bracket) + 1, 2):
            for floaters in itertools.combinations(bottom_up, count):
                yield sorted(floaters, key=bracket.index)

    def _bracket_pairings(self, bracket: list[int]) -> Iterator[list[Pair]]:
        """Pairings of a group without rematches, preferred first: the top half against
        the bottom half in order, then the bottom half's other orders, then any other."""
        half = len(bracket) // 2
        top, bottom = bracket[:half], bracket[half:]
        for order in itertools.permutations(bottom):
            if self.exhausted:
                return
            self.budget -= 1
            pairs = list(zip(top, order, strict=True))
            if all(self.is_new(pair) for pair in pairs):
                yield pairs
        yield from self._any_pairings(bracket)

    def _any_pairings(self, players: list[int]) -> Iterator[list[Pair]]:
        if not players:
            yield []
            return
        if self.exhausted:
            return
        self.budget -= 1
        top, rest = players[0], players[1:]
        for index, opponent in enumerate(rest):
            if not self.is_new((top, opponent)):
                continue
            for pairs in self._any_pairings(rest[:index] + rest[index + 1 :]):
                yield [(top, opponent), *pairs]

    def pair(self, players: list[int]) -> list[Pair] | None:
        """Nearest first over the whole field, regardless of points."""
        return next(self._any_pairings(players), None)


def _pair_preferring_new_opponents(
    players: list[int], met: Collection[frozenset[int]]
) -> list[Pair]:
    """Greedy from the top: the nearest new opponent, else the nearest one."""
    pairs = []
    free = list(players)
    while len(free) >= 2:
        top = free.pop(0)
        opponent = next((other for other in free if frozenset((top, other)) not in met), free[0])
        free.remove(opponent)
        pairs.append((top, opponent))
    return pairs
