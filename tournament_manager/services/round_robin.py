"""Round robin: who plays whom."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

from core.errors import ArenaError

#: The most duels a round robin of a game of more than two players schedules: every group
#: of N among P participants is C(P, N) duels, which grows fast.
MAX_ROUND_ROBIN_GROUPS = 500


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
