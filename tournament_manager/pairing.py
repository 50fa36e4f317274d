"""Swiss pairings, as pure functions of the standings (players are ids, best first).

Round 1 pairs by seed, the top half against the bottom half (1 v n/2+1, 2 v n/2+2...),
and the last seed sits out when the count is odd. Later rounds walk the standings from
the top: each player meets the nearest player below it (so equal or close points) who is
still free and whom it has not met; when that leaves someone without an opponent the
search backtracks, so a rematch happens only when no pairing of the round avoids one.
An odd count gives a bye to the lowest-ranked player among those with the fewest byes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

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


def next_round(
    ranked: Sequence[int],
    *,
    met: Collection[frozenset[int]],
    byes: Mapping[int, int],
    budget: int = SEARCH_BUDGET,
) -> SwissRound:
    """Pair ``ranked`` (best first) so that nobody meets an opponent from ``met`` again
    when that can be avoided; ``byes`` counts the byes each player already had."""
    players = list(ranked)
    if len(players) % 2 == 0:
        candidates: list[int | None] = [None]
    else:
        # Lowest-ranked first among those with the fewest byes; the next candidates only
        # when the rest cannot be paired without a rematch.
        bottom_up = list(reversed(players))
        candidates = sorted(bottom_up, key=lambda player: byes.get(player, 0))
    search = _Search(met=met, budget=budget)
    for bye in candidates:
        pairs = search.pair([player for player in players if player != bye])
        if pairs is not None:
            return SwissRound(pairs=pairs, bye=bye)
        if search.exhausted:
            break
    bye = candidates[0]
    rest = [player for player in players if player != bye]
    return SwissRound(pairs=_pair_preferring_new_opponents(rest, met), bye=bye)


class _Search:
    """Depth-first search for a pairing without rematches, with a shared step budget."""

    def __init__(self, *, met: Collection[frozenset[int]], budget: int) -> None:
        self.met = met
        self.budget = budget

    @property
    def exhausted(self) -> bool:
        return self.budget <= 0

    def pair(self, players: list[int]) -> list[Pair] | None:
        if not players:
            return []
        if self.exhausted:
            return None
        self.budget -= 1
        top, rest = players[0], players[1:]
        for index, opponent in enumerate(rest):
            if frozenset((top, opponent)) in self.met:
                continue
            pairs = self.pair(rest[:index] + rest[index + 1 :])
            if pairs is not None:
                return [(top, opponent), *pairs]
        return None


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
