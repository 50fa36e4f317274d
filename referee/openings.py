"""Openings: the random first moves that vary a duel's matches in a deterministic game.

Two deterministic agents given the same position play the same match, so without help a
duel of ten matches holds two (one per seat order), each repeated five times. A game whose
``info.yml`` sets ``opening_moves`` therefore starts each match with that many random legal
moves, played by the referee before the agents take over and recorded with the match's
actions (its first ``MatchRecord.opening`` steps), so a replay shows them as it shows every
move.

Fair: the matches of one turn of the seat rotation (``seat_rotation``: with two players,
matches 2k and 2k+1) share their opening, each player sitting in each seat of it once.
Varied: a duel's openings are drawn from the duel's seed, one per turn, each unlike the
earlier ones while the game has unused openings to give (``ATTEMPTS`` draws to find one).
An opening never ends the match: a draw that would is drawn again.
"""

from __future__ import annotations

import json
import random
from typing import Any

from environments.base import Environment

#: Draws tried for an opening unlike the duel's earlier ones (and one that leaves a game
#: to play) before the last one is taken as it is.
ATTEMPTS = 50

#: One step of an opening, as a match records it: an action per seat, None for a seat
#: that did not move.
Step = list[Any]


def opening_turn(index: int, players: int) -> int:
    """The turn of the seat rotation match ``index`` belongs to: the matches of one turn
    share an opening."""
    return index // players


def _walk(environment: Environment, moves: int, chooser: random.Random) -> list[Step] | None:
    """Up to ``moves`` random legal steps from the environment's start (already reset);
    None if one of them ended the match."""
    steps: list[Step] = []
    for _ in range(moves):
        movers = environment.to_move()
        if not movers:
            return None
        actions = {seat: chooser.choice(environment.legal_actions(seat)) for seat in movers}
        environment.apply(actions)
        steps.append([actions.get(seat) for seat in range(environment.num_players)])
    return None if environment.is_terminal() else steps


def duel_openings(
    environment: Environment, *, duel_seed: int, moves: int, turns: int
) -> list[list[Step]]:
    """The openings of the first ``turns`` turns of a duel seeded ``duel_seed``: ``moves``
    random steps each from the game's start (reset with the duel's seed: a game with an
    opening has no chance, so every match starts alike), turn 0's first. ``environment``
    is used to play them and left in any state."""
    if moves <= 0:
        return [[] for _ in range(turns)]
    chooser = random.Random(f"opening {duel_seed}")
    seen: set[str] = set()
    openings: list[list[Step]] = []
    for _ in range(turns):
        chosen: list[Step] = []
        for _attempt in range(ATTEMPTS):
            environment.reset(duel_seed)
            steps = _walk(environment, moves, chooser)
            if steps is None:
                continue
            chosen = steps
            key = json.dumps(steps, sort_keys=True)
            if key not in seen:
                break
        seen.add(json.dumps(chosen, sort_keys=True))
        openings.append(chosen)
    return openings
