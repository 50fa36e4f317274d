"""Ladder matchmaking, as pure functions of the idle agents.

Every pair of idle agents gets a score: the predicted quality of their duel (openskill's
probability of a draw, highest for close ratings), plus for each of the two a bonus that
grows without limit with the time it has waited since its last duel, plus a bonus for
agents with few duels in the ladder. Pairs are taken greedily from the best score down,
each agent at most once, until the free duel slots are filled.

No agent waits forever: a pair that leaves out the agent A who has waited longest wins
only if both its agents have waited almost as long as A (within what quality and the
newcomer bonus can be worth), and an agent that just played has not; so once A has
waited that much longer than everyone who played since, A's pairs come first.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from openskill.models import PlackettLuce

from core.models.ratings import DEFAULT_MU, DEFAULT_SIGMA

_MODEL = PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)

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


@dataclasses.dataclass(frozen=True)
class Matchmaker:
    #: Waiting this long adds 1 to the agent's pairings' scores.
    wait_seconds: float
    #: Agents with fewer duels than this get a bonus.
    newcomer_duels: int

    def quality(self, one: LadderAgent, two: LadderAgent) -> float:
        return float(
            _MODEL.predict_draw(
                [
                    [_MODEL.rating(mu=one.mu, sigma=one.sigma)],
                    [_MODEL.rating(mu=two.mu, sigma=two.sigma)],
                ]
            )
        )

    def bonus(self, agent: LadderAgent) -> float:
        waiting = max(0.0, agent.waiting) / self.wait_seconds
        if self.newcomer_duels <= 0:
            return waiting
        newcomer = NEWCOMER_BONUS * max(0.0, 1 - agent.duels / self.newcomer_duels)
        return waiting + newcomer

    def score(self, one: LadderAgent, two: LadderAgent) -> float:
        return self.quality(one, two) + self.bonus(one) + self.bonus(two)

    def pairings(
        self, agents: Sequence[LadderAgent], *, slots: int
    ) -> list[tuple[LadderAgent, LadderAgent]]:
        """At most ``slots`` disjoint pairs of ``agents``, best scores first."""
        if slots <= 0:
            return []
        scored = sorted(
            (
                (-self.score(one, two), one.key, two.key, one, two)
                for one, two in itertools.combinations(agents, 2)
                if one.competitor != two.competitor
            ),
            key=lambda entry: entry[:3],
        )
        chosen: list[tuple[LadderAgent, LadderAgent]] = []
        busy: set[int] = set()
        for _, _, _, one, two in scored:
            if one.key in busy or two.key in busy:
                continue
            chosen.append((one, two))
            busy.update((one.key, two.key))
            if len(chosen) == slots:
                break
        return chosen
