"""Openings: the random first moves that vary a duel's matches in a deterministic game.

Two deterministic agents given the same position play the same match, so without help a
duel of ten matches holds two (one per seat order), each repeated five times. A game whose
``info.yml`` sets ``opening_moves`` therefore starts each match with that many random legal
moves, played by the referee before the agents take over and recorded with the match's
actions (its first ``MatchRecord.opening`` steps), so a replay shows them as it shows every
move.

Fair: the matches of one turn of the seat rotation (``seat_rotation``: with two players,
matches 2k and 2k+1) share their opening, each player sitting in each seat of it once.
Varied: a duel's openings are drawn from the duel's seed, one per turn, without
replacement: each is one the duel has not given yet, until it has given every opening the
game has, when it draws them all again in a new order. An opening never ends the match.

Drawn as a walk down the tree of the game's first moves that avoids the branches whose
openings were all given (or all end the match): a draw costs a few steps of the game
whatever the turn. Drawing at random and drawing again on a repeat, as this module did,
cost a 200-match Connect Four duel (49 openings of two moves for its 100 turns) about a
sixth of its time once the openings ran out.
"""

from __future__ import annotations

import random
from typing import Any

from environments.base import Environment

#: One step of an opening, as a match records it: an action per seat, None for a seat
#: that did not move.
Step = list[Any]

#: A place in the tree of the game's first moves: the index, among the legal actions, of
#: each choice made to reach it (one choice per moving seat, so a step of a game whose
#: seats move at once is as many choices as movers).
Node = tuple[int, ...]


def opening_turn(index: int, players: int) -> int:
    """The turn of the seat rotation match ``index`` belongs to: the matches of one turn
    share an opening."""
    return index // players


class _OpeningTree:
    """The openings of ``moves`` steps from the game's start (reset with ``seed``), drawn
    without replacement with ``chooser``: ``draw`` walks down from the root, choosing at
    random among the branches not yet used up, to a position that has not ended."""

    def __init__(
        self, environment: Environment, *, seed: int, moves: int, chooser: random.Random
    ) -> None:
        self._environment = environment
        self._seed = seed
        self._moves = moves
        self._chooser = chooser
        #: Each node reached so far: the seat that chooses there and its legal actions.
        self._choices: dict[Node, tuple[int, list[Any]]] = {}
        #: Nodes whose openings were all given in this round, or that end the match.
        self._used: set[Node] = set()
        #: Nodes where the match has ended: never an opening, in any round.
        self._ended: set[Node] = set()
        self._given_this_round = 0

    def draw(self) -> list[Step]:
        """The next opening: one not given in this round; [] if the game has none."""
        while True:
            if () in self._used:
                if self._given_this_round == 0:
                    return []  # every way of playing the opening's moves ends the match
                self._used = set(self._ended)
                self._given_this_round = 0
            steps = self._walk()
            if steps is not None:
                self._given_this_round += 1
                return steps

    def _walk(self) -> list[Step] | None:
        """One walk from the root; the opening it reached, or None if it reached a node
        that ended the match or had nothing left (marked used: the next walk avoids it)."""
        environment = self._environment
        environment.reset(self._seed)
        node: Node = ()
        steps: list[Step] = []
        while len(steps) < self._moves:
            movers = environment.to_move()
            if not movers:
                self._mark_ended(node)
                return None
            actions: dict[int, Any] = {}
            for seat in movers:
                choices = self._choices.get(node)
                if choices is None:
                    choices = self._choices[node] = (seat, environment.legal_actions(seat))
                legal = choices[1]
                left = [index for index in range(len(legal)) if (*node, index) not in self._used]
                if not left:
                    self._mark_used(node)
                    return None
                index = self._chooser.choice(left)
                actions[seat] = legal[index]
                node = (*node, index)
            environment.apply(actions)
            steps.append([actions.get(seat) for seat in range(environment.num_players)])
        if environment.is_terminal():
            self._mark_ended(node)
            return None
        self._mark_used(node)
        return steps

    def _mark_ended(self, node: Node) -> None:
        self._ended.add(node)
        self._mark_used(node)

    def _mark_used(self, node: Node) -> None:
        """``node`` has nothing left to give; so has each parent whose children all have
        nothing left."""
        self._used.add(node)
        while node:
            parent = node[:-1]
            if any(
                (*parent, index) not in self._used for index in range(len(self._choices[parent][1]))
            ):
                return
            self._used.add(parent)
            node = parent


def duel_openings(
    environment: Environment, *, duel_seed: int, moves: int, turns: int
) -> list[list[Step]]:
    """The openings of the first ``turns`` turns of a duel seeded ``duel_seed``: ``moves``
    random steps each from the game's start (reset with the duel's seed: a game with an
    opening has no chance, so every match starts alike), turn 0's first. ``environment``
    is used to play them and left in any state."""
    if moves <= 0:
        return [[] for _ in range(turns)]
    tree = _OpeningTree(
        environment, seed=duel_seed, moves=moves, chooser=random.Random(f"opening {duel_seed}")
    )
    return [tree.draw() for _ in range(turns)]
