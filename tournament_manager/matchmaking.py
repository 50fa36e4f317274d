"""Ladder matchmaking, as pure functions of the idle agents.

Every pair of idle agents gets a score: how uncertain their order on the leaderboard is
(the probability, under the two ratings, that the one rated lower is in fact the
stronger: 1/2 for equal ratings or for agents barely measured, near 0 for a well
separated pair whose ratings are sure, which is therefore not replayed), plus for each
of the two a bonus that grows without limit with the time it has waited since its last
duel, plus a bonus for agents with few duels in the ladder. Pairs are taken greedily from
the best score down, each agent at most once, until the free duel slots are filled.
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

No agent waits forever: a pair that leaves out the agent A who has waited longest wins
only if both its agents have waited almost as long as A (within what quality and the
newcomer bonus can be worth), and an agent that just played has not; so once A has
waited that much longer than everyone who played since, A's pairs come first.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

#: The bonus of an agent with no duel yet; it shrinks to 0 at ``newcomer_duels`` duels.
NEWCOMER_BONUS = 0.5


@dataclasses.dataclass(frozen=True)
class LadderAgent:
    #: The revision playing.
    key: int
    competitor: int
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
        spread = math.sqrt(one.sigma**2 + two.sigma**2)
        if spread == 0:
            return 0.0
        return 0.5 * math.erfc(abs(one.mu - two.mu) / (spread * math.sqrt(2)))

    def bonus(self, agent: LadderAgent) -> float:
        waiting = max(0.0, agent.waiting) / self.wait_seconds
        if self.newcomer_duels <= 0:
            return waiting
        newcomer = NEWCOMER_BONUS * max(0.0, 1 - agent.duels / self.newcomer_duels)
        return waiting + newcomer

    def score(self, one: LadderAgent, two: LadderAgent) -> float:
        return self.uncertainty(one, two) + self.bonus(one) + self.bonus(two)

    def may_meet(self, one: LadderAgent, two: LadderAgent) -> bool:
        """Agents of one kind always; an online agent and a hosted one once the online
        one has waited ``fill_seconds``."""
        if one.competitor == two.competitor:
            return False
        if one.online == two.online:
            return True
        online = one if one.online else two
        return online.waiting >= self.fill_seconds

    def pairings(
        self, agents: Sequence[LadderAgent], *, slots: int, online_slots: int = 0
    ) -> list[tuple[LadderAgent, LadderAgent]]:
        """Disjoint pairs of ``agents``, best scores first: at most ``slots`` between
        hosted agents and ``online_slots`` with an online agent or an LLM player in them."""
        free = {False: max(0, slots), True: max(0, online_slots)}
        if not any(free.values()):
            return []
        scored = sorted(
            (
                (-self.score(one, two), one.key, two.key, one, two)
                for one, two in itertools.combinations(agents, 2)
                if self.may_meet(one, two)
            ),
            key=lambda entry: entry[:3],
        )
        chosen: list[tuple[LadderAgent, LadderAgent]] = []
        busy: set[int] = set()
        for _, _, _, one, two in scored:
            kind = one.networked or two.networked
            if one.key in busy or two.key in busy or not free[kind]:
                continue
            chosen.append((one, two))
            busy.update((one.key, two.key))
            free[kind] -= 1
            if not any(free.values()):
                break
        return chosen

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
        chosen: list[tuple[LadderAgent, ...]] = []
        left = sorted(agents, key=lambda agent: (-self.bonus(agent), agent.key))
        for anchor in list(left):
            if not any(free.values()):
                break
            if anchor not in left:
                continue
            group = [anchor]
            while len(group) < size:
                candidates = [
                    agent
                    for agent in left
                    if agent not in group and all(self.may_meet(agent, member) for member in group)
                ]
                if not candidates:
                    break
                group.append(
                    max(
                        candidates,
                        key=lambda agent: (
                            self.bonus(agent)
                            + sum(self.uncertainty(agent, member) for member in group),
                            -agent.key,
                        ),
                    )
                )
            kind = any(agent.networked for agent in group)
            if len(group) < size or not free[kind]:
                continue
            chosen.append(tuple(group))
            free[kind] -= 1
            for agent in group:
                left.remove(agent)
        return chosen
