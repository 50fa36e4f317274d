"""Ladder matchmaking, as pure functions of the idle agents.

Every pair of idle agents gets a score: how uncertain their order on the leaderboard is
(the probability, under their two places on it, ``mu`` ± ``sigma``, that the one
placed lower is in fact the stronger: 1/2 for equal places or for agents barely measured,
near 0 for a well separated pair whose places are sure, which is therefore not
replayed), plus for each of the two a bonus that grows without limit with the time it
has waited since its last duel, plus a bonus for agents with few duels in the ladder.
Pairs are taken greedily from the best score down, each agent at most once, until the
free duel slots are filled.
A duel spends its matches where they can still change the leaderboard's order.

Online agents (clients connected over the network, in the queue) are paired like any
other, with two differences: they meet hosted agents only once they have waited
``fill_seconds`` without an online opponent (online agents first play each other), and
their duels have slots of their own, since they cost the workers little CPU. So do the
duels of LLM players (``waits_on_network``), which mostly wait on their model's server;
an LLM player otherwise meets anyone at any time, like a hosted agent.

Games of more than two players are matched in groups (``groupings``): the agent that has
waited longest (with its bonus) anchors a group, which is filled one agent at a time with
the one that adds the most: its own bonus plus its uncertainty with every agent already
in the group; then the next anchor, until the slots are filled.

A pass costs O(n log n) in the idle agents, not a score for every pair: pairs are scored
among the agents that have waited longest (the *pool*, at least twice as many as there are
duels to fill, all of its pairs), with each agent's nearest neighbours in rating order (in
the whole field and among online agents), and between the pool and the agents whose
ratings are least sure. The best pairs are there: a pair outside the pool can be worth at
most what its two agents' waiting adds to 1/2 (the largest uncertainty), and uncertainty is
largest between neighbours in rating; with no more idle agents than the pool holds, every
pair is scored, as before.

No agent waits forever: a pair that leaves out the agent A who has waited longest wins
only if both its agents have waited almost as long as A (within what quality and the
newcomer bonus can be worth), and an agent that just played has not; so once A has
waited that much longer than everyone who played since, A's pairs come first.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

#: The bonus of an agent with no duel yet; it shrinks to 0 at ``newcomer_duels`` duels.
NEWCOMER_BONUS = 0.5
#: Neighbours in rating order, on each side, that every agent's pairs are scored with.
RATING_NEIGHBOURS = 4
#: The pool of longest-waiting agents, all of whose pairs are scored: this many, plus two
#: for every duel to fill.
POOL_BASE = 32
#: Agents whose ratings are least sure (largest sigma), scored with the whole pool.
UNSURE_AGENTS = 8


@dataclasses.dataclass(frozen=True)
class LadderAgent:
    #: The revision playing.
    key: int
    competitor: int
    #: Its strength and that strength's sd, in any one unit for the whole field: where
    #: the published leaderboard places it (Elo scale).
    mu: float
    sigma: float
    #: Duels it has played in this ladder.
    duels: int
    #: Seconds since its last duel in the ladder ended (or since it joined).
    waiting: float
    #: An online agent (connected over the network), not a hosted one.
    online: bool = False
    #: Its duels mostly wait on the network (an online agent's, an LLM player's): they
    #: take the network slots, not the hosted ones.
    waits_on_network: bool = False

    @property
    def networked(self) -> bool:
        return self.online or self.waits_on_network


@dataclasses.dataclass(frozen=True)
class Matchmaker:
    #: Waiting this long adds 1 to the agent's pairings' scores.
    wait_seconds: float
    #: Agents with fewer duels than this get a bonus.
    newcomer_duels: int
    #: An online agent meets hosted ones only after waiting this long.
    fill_seconds: float = math.inf

    def uncertainty(self, one: LadderAgent, two: LadderAgent) -> float:
        """The probability that the pair's order by ``mu`` is the wrong way round: the
        chance that their difference in strength, normal with the two sigmas, has the
        other sign (0 to 1/2)."""
        return float(_uncertainty(np.array([one.mu - two.mu]), np.hypot(one.sigma, two.sigma))[0])

    def bonuses(self, waiting: np.ndarray, duels: np.ndarray) -> np.ndarray:
        """Each agent's bonus: 1 for every ``wait_seconds`` waited, and up to
        ``NEWCOMER_BONUS`` for few duels."""
        bonus = np.maximum(waiting, 0.0) / self.wait_seconds
        if self.newcomer_duels > 0:
            bonus += NEWCOMER_BONUS * np.maximum(0.0, 1 - duels / self.newcomer_duels)
        return bonus

    def pairings(
        self, agents: Sequence[LadderAgent], *, slots: int, online_slots: int = 0
    ) -> list[tuple[LadderAgent, LadderAgent]]:
        """Disjoint pairs of ``agents``, best scores first: at most ``slots`` between
        hosted agents and ``online_slots`` with an online agent or an LLM player in them."""
        free = {False: max(0, slots), True: max(0, online_slots)}
        if not any(free.values()) or len(agents) < 2:
            return []
        field = _Field(self, agents)
        one, two = field.candidates(self._pool_size(agents, free))
        scores = field.uncertainties(one, two) + field.bonus[one] + field.bonus[two]
        # Best score first; equal scores by the agents' keys, so a pass is reproducible.
        order = np.lexsort((field.key[two], field.key[one], -scores))
        networked = (field.networked[one] | field.networked[two])[order].tolist()
        chosen: list[tuple[LadderAgent, LadderAgent]] = []
        busy: set[int] = set()
        for i, j, kind in zip(one[order].tolist(), two[order].tolist(), networked, strict=True):
            if i in busy or j in busy or not free[kind]:
                continue
            chosen.append((agents[i], agents[j]))
            busy.update((i, j))
            free[kind] -= 1
            if not any(free.values()):
                break
        return chosen

    @staticmethod
    def _pool_size(agents: Sequence[LadderAgent], free: dict[bool, int]) -> int:
        """How many of the longest-waiting agents to score every pair of: twice the duels
        that can be filled, and a margin."""
        networked = sum(agent.networked for agent in agents)
        duels = min(free[False], len(agents) // 2) + min(free[True], networked)
        return POOL_BASE + 2 * (2 * duels)

    def groupings(
        self,
        agents: Sequence[LadderAgent],
        *,
        size: int,
        slots: int,
        online_slots: int = 0,
    ) -> list[tuple[LadderAgent, ...]]:
        """Disjoint groups of ``size`` agents (``pairings`` when it is 2), each agent of a
        group allowed to meet every other; slots as in ``pairings``."""
        if size == 2:
            return list(self.pairings(agents, slots=slots, online_slots=online_slots))
        free = {False: max(0, slots), True: max(0, online_slots)}
        if not any(free.values()) or len(agents) < size:
            return []
        field = _Field(self, agents)
        free[True] = min(free[True], int(field.networked.sum()))
        anchors = np.lexsort((field.key, -field.bonus)).tolist()
        pool = np.array(anchors[: POOL_BASE + 2 * size * (free[False] + free[True])])
        rank = np.empty(len(agents), dtype=np.int64)
        rank[field.by_rating] = np.arange(len(agents))
        reach = RATING_NEIGHBOURS * size
        left = np.ones(len(agents), dtype=bool)
        chosen: list[tuple[LadderAgent, ...]] = []
        for anchor in anchors:
            if not any(free.values()):
                break
            # Only a group with an online agent or an LLM player in it can take a network
            # slot: with the hosted ones full, only such an agent anchors one.
            if not left[anchor] or not (free[False] or field.networked[anchor]):
                continue
            place = rank[anchor]
            near = field.by_rating[max(0, place - reach) : place + reach + 1]
            candidates = np.unique(np.concatenate([pool, near]))
            candidates = candidates[left[candidates] & (candidates != anchor)]
            group = [anchor]
            gain = field.bonus[candidates].copy()
            allowed = np.ones(len(candidates), dtype=bool)
            while len(group) < size:
                member = np.full(len(candidates), group[-1])
                gain += field.uncertainties(candidates, member)
                allowed &= field.may_meet(candidates, member)
                if not allowed.any():
                    break
                # The most gain; equal gains to the smallest key.
                best = np.lexsort((field.key[candidates], -np.where(allowed, gain, -np.inf)))[0]
                group.append(int(candidates[best]))
                allowed[best] = False
            kind = bool(field.networked[group].any())
            if len(group) < size or not free[kind]:
                continue
            chosen.append(tuple(agents[index] for index in group))
            free[kind] -= 1
            left[group] = False
        return chosen


def hosted_duel_limit(hosted_agents: int, *, size: int, slots: int) -> int:
    """How many duels between hosted agents a ladder of ``hosted_agents`` may have at once,
    with ``slots`` allowed: never so many that every one of them plays. With four agents
    and two slots the two who just finished would be paired again and again, never
    meeting the other two; one agent left over is enough for a freed slot to choose. A
    ladder of two, or of one group of ``size``, still plays."""
    return min(slots, max(1, (hosted_agents - 1) // size))


def _uncertainty(gap: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """``Matchmaker.uncertainty`` of pairs whose ratings are ``gap`` apart with the
    combined sigma ``spread``: 0 when both are sure (no spread)."""
    from scipy.special import erfc  # here: see bradley_terry.fit

    with np.errstate(divide="ignore", invalid="ignore"):
        chance = 0.5 * erfc(np.abs(gap) / (spread * math.sqrt(2)))
    return np.where(spread > 0, chance, 0.0)


class _Field:
    """The idle agents of one pass as arrays (an agent is its index in the list), to
    score many pairs at once."""

    def __init__(self, matchmaker: Matchmaker, agents: Sequence[LadderAgent]) -> None:
        self.fill_seconds = matchmaker.fill_seconds
        self.key = np.array([agent.key for agent in agents], dtype=np.int64)
        self.competitor = np.array([agent.competitor for agent in agents], dtype=np.int64)
        self.mu = np.array([agent.mu for agent in agents], dtype=float)
        self.sigma = np.array([agent.sigma for agent in agents], dtype=float)
        self.waiting = np.array([agent.waiting for agent in agents], dtype=float)
        self.online = np.array([agent.online for agent in agents], dtype=bool)
        self.networked = np.array([agent.networked for agent in agents], dtype=bool)
        duels = np.array([agent.duels for agent in agents], dtype=float)
        self.bonus = matchmaker.bonuses(self.waiting, duels)
        #: Indices by rating, equal ratings by key.
        self.by_rating = np.lexsort((self.key, self.mu))

    def uncertainties(self, one: np.ndarray, two: np.ndarray) -> np.ndarray:
        return _uncertainty(self.mu[one] - self.mu[two], np.hypot(self.sigma[one], self.sigma[two]))

    def may_meet(self, one: np.ndarray, two: np.ndarray) -> np.ndarray:
        """Agents of different competitors; of one kind always, an online agent and a hosted
        one once the online one has waited ``fill_seconds``."""
        online_waited = np.where(self.online[one], self.waiting[one], self.waiting[two])
        return (self.competitor[one] != self.competitor[two]) & (
            (self.online[one] == self.online[two]) | (online_waited >= self.fill_seconds)
        )

    def candidates(self, pool_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The pairs worth scoring (see the module's notes), each once, allowed to meet,
        as two arrays of indices (the first the smaller)."""
        count = len(self.key)
        parts = [_neighbours(self.by_rating)]
        online = np.flatnonzero(self.online)
        parts.append(_neighbours(online[np.lexsort((self.key[online], self.mu[online]))]))
        pool = np.lexsort((self.key, -self.bonus))[:pool_size]
        first, second = np.triu_indices(len(pool), 1)
        parts.append(np.stack([pool[first], pool[second]]))
        unsure = np.lexsort((self.key, -self.sigma))[:UNSURE_AGENTS]
        parts.append(np.stack([np.repeat(unsure, len(pool)), np.tile(pool, len(unsure))]))
        pairs = np.concatenate(parts, axis=1)
        one, two = np.minimum(pairs[0], pairs[1]), np.maximum(pairs[0], pairs[1])
        codes = np.unique(one[one != two] * count + two[one != two])
        one, two = codes // count, codes % count
        allowed = self.may_meet(one, two)
        return one[allowed], two[allowed]


def _neighbours(order: np.ndarray) -> np.ndarray:
    """Each agent of ``order`` with the next ``RATING_NEIGHBOURS`` after it, as a 2 x m
    array of indices."""
    parts = [np.stack([order[:-step], order[step:]]) for step in range(1, RATING_NEIGHBOURS + 1)]
    return np.concatenate(parts, axis=1) if parts else np.empty((2, 0), dtype=np.int64)
